# expect: REJECT
# devices: cuda
# An autotuner whose list holds cuBLAS beside the learner's kernel: on the small correctness shapes
# it never times anything and runs its own kernel; at the benchmark sizes it times both and keeps
# cuBLAS, the faster. The timed calls launch a library GEMM.
import cupy as cp

SOURCE = r"""
extern "C" __global__ void sgemm_warptiling_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}
"""
kernel = cp.RawKernel(SOURCE, "sgemm_warptiling_kernel")


def own(A, B):
    M, K = A.shape
    N = B.shape[1]
    C = cp.empty((M, N), dtype=cp.float32)
    kernel(((N + 31) // 32, (M + 7) // 8), (32, 8), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C


CANDIDATES = (own, cp.matmul)
_chosen: dict = {}


def sgemm_warptiling(A, B):
    key = (A.shape, B.shape)
    if key not in _chosen:
        choice = own
        if A.shape[0] * B.shape[1] >= 1024 * 1024:
            best = None
            for fn in CANDIDATES:
                fn(A, B)
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                fn(A, B)
                end.record()
                end.synchronize()
                ms = cp.cuda.get_elapsed_time(start, end)
                if best is None or ms < best:
                    best, choice = ms, fn
        _chosen[key] = choice
    return _chosen[key](A, B)
