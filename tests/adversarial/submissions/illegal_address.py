# expect: ERROR
# problem: act0.saxpy
# devices: cuda
# says: CUDA error: an illegal memory access
# Writes far outside its output: an illegal memory access that kills this process's CUDA context.
# The fault surfaces when the worker waits for the call's kernels; it is the learner's ERROR, not
# "the grader failed" (what the verdict said on every GPU run before 2026-11-29).
import cupy as cp

SOURCE = r"""
extern "C" __global__ void saxpy_kernel(float a, const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + (1LL << 40)] = a * x[i] + y[i];
}
"""
kernel = cp.RawKernel(SOURCE, "saxpy_kernel")


def saxpy(a, x, y):
    out = cp.empty_like(x)
    kernel(((x.size + 255) // 256,), (256,), (cp.float32(a), x, y, out, cp.int64(x.size)))
    return out
