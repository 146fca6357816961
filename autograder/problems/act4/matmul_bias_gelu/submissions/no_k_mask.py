# expect: FAIL ERROR
# devices: cpu cuda
# entry: matmul_bias_gelu
# No mask on K: the last step of a K that is not a multiple of 32 adds products of whatever lies past
# the end of each row of x and of w (under the interpreter, a read outside the tensors).
import torch
import triton
import triton.language as tl


@triton.jit
def fused_kernel(x_ptr, w_ptr, b_ptr, o_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        x = tl.load(x_ptr + rows[:, None] * K + kk[None, :], mask=rows[:, None] < M, other=0.0)
        w = tl.load(w_ptr + kk[:, None] * N + cols[None, :], mask=cols[None, :] < N, other=0.0)
        acc = tl.dot(x, w, acc)
    z = acc + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    out = 0.5 * z * (2.0 - 2.0 / (tl.exp(2.0 * u) + 1.0))
    tl.store(o_ptr + rows[:, None] * N + cols[None, :], out.to(tl.bfloat16), mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul_bias_gelu(x, w, bias):
    M, K = x.shape
    N = w.shape[1]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    fused_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, w, bias, out, M, N, K, BM=64, BN=64, BK=32)
    return out
