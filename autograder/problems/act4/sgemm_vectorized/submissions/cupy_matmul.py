# expect: REJECT
# devices: cuda
# cuBLAS does the work through cupy.matmul; a decoy kernel of the learner's runs beside it.
import cupy as cp

SOURCE = r"""
extern "C" __global__ void sgemm_vectorized_kernel(float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = c[i] * 1.0f;
}
"""
kernel = cp.RawKernel(SOURCE, "sgemm_vectorized_kernel")


def sgemm_vectorized(A, B):
    C = cp.matmul(A, B)
    kernel(((C.size + 255) // 256,), (256,), (C, cp.int32(C.size)))
    return C
