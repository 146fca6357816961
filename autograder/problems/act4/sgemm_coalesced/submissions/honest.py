# expect: PASS
# devices: cuda
# An honest coalesced kernel: passes, earns speed points only by its own speed.
import cupy as cp

SOURCE = r"""
extern "C" __global__ void sgemm_coalesced_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}
"""
kernel = cp.RawKernel(SOURCE, "sgemm_coalesced_kernel")


def sgemm_coalesced(A, B):
    M, K = A.shape
    N = B.shape[1]
    C = cp.empty((M, N), dtype=cp.float32)
    kernel(((N + 31) // 32, (M + 31) // 32), (32, 32), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C
