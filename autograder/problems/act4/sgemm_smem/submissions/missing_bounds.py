# expect: FAIL ERROR
# devices: cuda
# No edge masks: right when M, N and K are multiples of 32 (128x128x128, the 4096^3 benchmark),
# wrong at 127x129x131 (tiles read past the rows of A and B, and C is written out of bounds).
import cupy as cp

SOURCE = r"""
#define TILE 32
extern "C" __global__ void sgemm_smem_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = A[(size_t)row * K + k0 + tx];
        Bs[ty][tx] = B[(size_t)(k0 + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(size_t)row * N + col] = acc;
}
"""
kernel = cp.RawKernel(SOURCE, "sgemm_smem_kernel")


def sgemm_smem(A, B):
    M, K = A.shape
    N = B.shape[1]
    C = cp.empty((M, N), dtype=cp.float32)
    kernel(((N + 31) // 32, (M + 31) // 32), (32, 32), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C
