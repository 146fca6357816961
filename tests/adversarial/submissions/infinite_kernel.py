# expect: TIMEOUT
# timeout: 30
# problem: act0.saxpy
# devices: cuda
# A kernel that never ends: the process is killed at the time limit and the GPU is free afterwards.
import cupy as cp

SOURCE = r"""
extern "C" __global__ void saxpy_kernel(float a, const float* x, const float* y, float* out, long long n) {
    // The clock only grows, and the compiler cannot know it: this loop never ends.
    const long long start = clock64();
    while (clock64() - start >= 0) { }
}
"""
kernel = cp.RawKernel(SOURCE, "saxpy_kernel")


def saxpy(a, x, y):
    out = cp.empty_like(x)
    kernel(((x.size + 255) // 256,), (256,), (cp.float32(a), x, y, out, cp.int64(x.size)))
    out.get()
    return out
