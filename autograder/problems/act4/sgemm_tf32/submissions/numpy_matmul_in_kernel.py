# expect: REJECT
# devices: cpu
# entry: sgemm_tf32
# says: does not compile for a GPU
# Loads A's and B's tiles with tl.load and stores C's with tl.store, but multiplies them with
# np.matmul inside the kernel: under the Triton interpreter a tile's values are a NumPy array and the
# body is plain Python, so the answer is right (and more exact than TF32) and every byte is the
# kernel's. No GPU compiler accepts the kernel; on a CPU the grader compiles it with Triton's front
# end too.
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def sgemm_tf32_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    cols = tl.program_id(1) * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        offs_k = k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak, mask=(rows[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn, mask=(offs_k[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc.handle.data = acc.handle.data + np.matmul(a.handle.data, b.handle.data)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


def sgemm_tf32(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    M, K = A.shape
    N = B.shape[1]
    C = torch.empty((M, N), device=A.device, dtype=torch.float32)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    sgemm_tf32_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1), BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    return C
