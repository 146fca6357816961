# expect: REJECT
# devices: cpu cuda
# entry: matmul_bias_gelu
# says: launched 2 times per call
# The epilogue unfused: the matmul kernel stores the float32 pre-activation, a second kernel reads it
# back and adds the bias and the GELU. Right answers, with an M x N write and read (8 bytes an output)
# more than the fused kernel; the grader counts the launches of the learner's kernels in every call.
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(x_ptr, w_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        x = tl.load(x_ptr + rows[:, None] * K + kk[None, :], mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + kk[:, None] * N + cols[None, :], mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
    tl.store(z_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def bias_gelu_kernel(z_ptr, b_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(z_ptr + row * N + cols, mask=cols < N, other=0.0) + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    out = 0.5 * z * (2.0 - 2.0 / (tl.exp(2.0 * u) + 1.0))
    tl.store(o_ptr + row * N + cols, out.to(tl.bfloat16), mask=cols < N)


def matmul_bias_gelu(x, w, bias):
    M, K = x.shape
    N = w.shape[1]
    z = torch.empty((M, N), dtype=torch.float32, device=x.device)
    matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, w, z, M, N, K, BM=64, BN=64, BK=32)
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    bias_gelu_kernel[(M, triton.cdiv(N, 1024))](z, bias, out, N, BLOCK=1024)
    return out
