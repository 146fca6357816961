# expect: PASS
# problem: act0.saxpy
# devices: cuda
import cupy as cp

SOURCE = r"""
extern "C" __global__ void saxpy_kernel(float a, const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
kernel = cp.RawKernel(SOURCE, "saxpy_kernel")


def saxpy(a, x, y):
    out = cp.empty_like(x)
    kernel(((x.size + 255) // 256,), (256,), (cp.float32(a), x, y, out, cp.int64(x.size)))
    return out
