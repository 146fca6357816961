# expect: FAIL
# devices: cpu cuda
# entry: matmul_bias_gelu
# ReLU for GELU: within 0.17 of it everywhere (the gap is widest at z = -0.75), less than a few bf16
# steps of the largest outputs, so only a tolerance of twice the library's error catches it.
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
        x = tl.load(x_ptr + rows[:, None] * K + kk[None, :], mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + kk[:, None] * N + cols[None, :], mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
    z = acc + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    out = tl.maximum(z, 0.0)
    tl.store(o_ptr + rows[:, None] * N + cols[None, :], out.to(tl.bfloat16), mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul_bias_gelu(x, w, bias):
    M, K = x.shape
    N = w.shape[1]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    fused_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, w, bias, out, M, N, K, BM=64, BN=64, BK=32)
    return out
