# expect: REJECT
# problem: act0.saxpy
# devices: cuda
# SAXPY through cupy.ElementwiseKernel, with a decoy RawKernel source declaring a kernel of the same
# name: a CuPy template writes the kernel, not the learner. Template names never count.
import cupy

DECOY = r"""
extern "C" __global__ void saxpy_kernel(const float a, const float* x, const float* y, float* out, int n) {}
"""

_saxpy = cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out", "out = a * x + y", "saxpy_kernel")


def saxpy(a, x, y):
    return _saxpy(cupy.float32(a), x, y)
