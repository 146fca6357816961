# expect: FAIL ERROR
# devices: cuda
# float4 loads on every shape: when K is not a multiple of 4, rows of A are not 16-byte aligned
# (a misaligned-address fault) and the last float4 of a row reads into the next one.
import cupy as cp

SOURCE = r"""
extern "C" __global__ void sgemm_vectorized_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; k += 4) {
            float4 a = *reinterpret_cast<const float4*>(A + (size_t)row * K + k);
            acc += a.x * B[(size_t)k * N + col];
            if (k + 1 < K) acc += a.y * B[(size_t)(k + 1) * N + col];
            if (k + 2 < K) acc += a.z * B[(size_t)(k + 2) * N + col];
            if (k + 3 < K) acc += a.w * B[(size_t)(k + 3) * N + col];
        }
        C[(size_t)row * N + col] = acc;
    }
}
"""
kernel = cp.RawKernel(SOURCE, "sgemm_vectorized_kernel")


def sgemm_vectorized(A, B):
    M, K = A.shape
    N = B.shape[1]
    C = cp.empty((M, N), dtype=cp.float32)
    kernel(((N + 31) // 32, (M + 31) // 32), (32, 32), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C
