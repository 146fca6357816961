# expect: FAIL
# devices: cuda
# entry: scale_shift_2d
# Reads x as if its rows were `cols` floats apart: right on contiguous inputs, wrong on every row but
# the first when x is a view into a wider buffer (1823x781 with a row pitch of 800).
import cupy as cp

SOURCE = r"""
extern "C" __global__ void scale_shift_2d_kernel(const float* x, const float* s, const float* b, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[(long long)row * cols + col] = s[row] * x[(long long)row * cols + col] + b[col];
}
"""
kernel = cp.RawKernel(SOURCE, "scale_shift_2d_kernel")


def scale_shift_2d(x, row_scale, col_shift):
    rows, cols = x.shape
    out = cp.empty((rows, cols), dtype=cp.float32)
    kernel(((cols + 31) // 32, (rows + 7) // 8), (32, 8), (x, row_scale, col_shift, out, cp.int32(rows), cp.int32(cols)))
    return out
