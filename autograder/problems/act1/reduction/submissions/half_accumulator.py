# expect: FAIL
# devices: cuda
# entry: reduce_sum
# Each thread accumulates in half precision: 11 significant bits cannot hold running sums in the
# thousands, far outside the tolerance derived from cupy.sum's float32 error.
import cupy as cp

SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void sum_half_kernel(const float* x, float* partials, long long n) {
    __half acc = __float2half(0.0f);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        acc = __hadd(acc, __float2half(x[i]));
    float v = __half2float(acc);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    __shared__ float warps[32];
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? warps[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) partials[blockIdx.x] = v;
    }
}
extern "C" __global__ void sum_final_kernel(const float* partials, float* out, int count) {
    if (threadIdx.x == 0) { float s = 0.0f; for (int i = 0; i < count; ++i) s += partials[i]; out[0] = s; }
}
"""
partials_kernel = cp.RawKernel(SOURCE, "sum_half_kernel")
final_kernel = cp.RawKernel(SOURCE, "sum_final_kernel")


def reduce_sum(x):
    partials = cp.empty(64, dtype=cp.float32)
    out = cp.empty((), dtype=cp.float32)
    partials_kernel((64,), (256,), (x, partials, cp.int64(x.size)))
    final_kernel((1,), (32,), (partials, out, cp.int32(64)))
    return out
