# expect: FAIL
# devices: cuda
# Rounds A and B to float16 on the way into shared memory (half the bytes a tensor core would
# read): float32 accumulation, but inputs with 11 significant bits instead of 24.
import cupy as cp

SOURCE = r"""
#include <cuda_fp16.h>
#define TILE 32
extern "C" __global__ void sgemm_smem_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        float a = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        float b = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        As[ty][tx] = __half2float(__float2half(a));
        Bs[ty][tx] = __half2float(__float2half(b));
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
"""
kernel = cp.RawKernel(SOURCE, "sgemm_smem_kernel")


def sgemm_smem(A, B):
    M, K = A.shape
    N = B.shape[1]
    C = cp.empty((M, N), dtype=cp.float32)
    kernel(((N + 31) // 32, (M + 31) // 32), (32, 32), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C
