# expect: REJECT
# devices: cpu cuda
# entry: matmul_bias_gelu
# The library path itself (cuBLASLt's fused epilogue through torch._addmm_activation) computes the
# answer; a Triton kernel of the learner's reads every input and stores the library's result, so
# one launch of the learner's own kernel writes the output.
import torch
import triton
import triton.language as tl


@triton.jit
def store_kernel(x_ptr, w_ptr, b_ptr, z_ptr, o_ptr, M, N, K, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # Touch every input once, so no input looks unread.
    for start in range(0, M * K, BLOCK):
        tl.load(x_ptr + start + offs, mask=start + offs < M * K, other=0.0)
    for start in range(0, K * N, BLOCK):
        tl.load(w_ptr + start + offs, mask=start + offs < K * N, other=0.0)
    tl.load(b_ptr + offs, mask=offs < N, other=0.0)
    for start in range(0, M * N, BLOCK):
        mask = start + offs < M * N
        tl.store(o_ptr + start + offs, tl.load(z_ptr + start + offs, mask=mask), mask=mask)


def matmul_bias_gelu(x, w, bias):
    z = torch._addmm_activation(bias, x, w, use_gelu=True).contiguous()
    out = torch.empty_like(z)
    store_kernel[(1,)](x.contiguous(), w.contiguous(), bias, z, out, x.shape[0], w.shape[1], x.shape[1], BLOCK=1024)
    return out
