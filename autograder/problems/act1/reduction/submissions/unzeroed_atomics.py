# expect: FAIL
# devices: cuda
# entry: reduce_sum
# One atomicAdd per block into an output that was never zeroed: the sum lands on top of whatever
# the allocation held (the grader fills fresh memory with NaN canaries).
import cupy as cp

SOURCE = r"""
extern "C" __global__ void sum_atomic_kernel(const float* x, float* out, long long n) {
    float v = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    __shared__ float warps[32];
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? warps[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}
"""
kernel = cp.RawKernel(SOURCE, "sum_atomic_kernel")


def reduce_sum(x):
    out = cp.empty((), dtype=cp.float32)
    kernel((264,), (512,), (x, out, cp.int64(x.size)))
    return out
