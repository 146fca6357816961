# expect: FAIL
# devices: cuda
# TF32 by hand: keeps 10 mantissa bits of each input (what a TF32 tensor core multiplies), sums in
# float32. Faster on tensor cores, and not the float32 product the exercise asks for.
import cupy as cp

SOURCE = r"""
__device__ __forceinline__ float tf32(float x) { return __uint_as_float(__float_as_uint(x) & 0xFFFFE000u); }
extern "C" __global__ void sgemm_coalesced_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += tf32(A[(size_t)row * K + k]) * tf32(B[(size_t)k * N + col]);
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
