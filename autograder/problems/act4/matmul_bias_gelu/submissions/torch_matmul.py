# expect: REJECT
# devices: cpu cuda
# entry: matmul_bias_gelu
# cuBLAS does the product and only the epilogue is a Triton kernel of the learner's. The product is
# taken in float32: rounded to bf16 before the bias, one value of a 1x1x1 case fell outside its
# tolerance in one CPU run (FAIL, before the check that rejects this).
import torch
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(z_ptr, b_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(z_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32) + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    out = 0.5 * z * (2.0 - 2.0 / (tl.exp(2.0 * u) + 1.0))
    tl.store(o_ptr + row * N + cols, out.to(tl.bfloat16), mask=cols < N)


def matmul_bias_gelu(x, w, bias):
    M, N = x.shape[0], w.shape[1]
    z = x.float() @ w.float()
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    bias_gelu_kernel[(M, triton.cdiv(N, 1024))](z, bias, out, N, BLOCK=1024)
    return out
