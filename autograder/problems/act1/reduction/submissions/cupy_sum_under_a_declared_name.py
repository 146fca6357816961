# expect: REJECT
# devices: cuda
# entry: reduce_sum
# says: not yours
# cupy.sum with CUB turned off runs CuPy's own reduction kernel, whose name is plain (cupy_sum...,
# no namespace or template to mark it as a library's), and the source declares a kernel of that
# name in a CUDA string it never compiles: judged by name alone, CuPy's kernel passed as the
# learner's at cupy.sum's own speed. CuPy names every kernel of its own cupy_...: never the learner's.
import cupy as cp

cp._core.set_reduction_accelerators([])
cp._core.set_routine_accelerators([])
DECLARED = r"""
extern "C" __global__ void cupy_sum(const float* x, float* out, long long n) {}
extern "C" __global__ void cupy_sum__float32_float32(const float* x, float* out, long long n) {}
"""


def reduce_sum(x):
    return cp.sum(x)
