# expect: FAIL ERROR
# devices: cuda
# entry: scale_shift_2d
# Masks the columns but not the rows: the bottom row of blocks writes past the end of the output
# when rows is not a multiple of 8 (127x129, 1823x781).
import cupy as cp

SOURCE = r"""
extern "C" __global__ void scale_shift_2d_kernel(const float* x, const float* s, const float* b, float* out, int rows, int cols, long long pitch) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < cols) out[(long long)row * cols + col] = s[row] * x[row * pitch + col] + b[col];
}
"""
kernel = cp.RawKernel(SOURCE, "scale_shift_2d_kernel")


def scale_shift_2d(x, row_scale, col_shift):
    rows, cols = x.shape
    pitch = x.strides[0] // 4 if rows > 1 else cols
    out = cp.empty((rows, cols), dtype=cp.float32)
    kernel(((cols + 31) // 32, (rows + 7) // 8), (32, 8), (x, row_scale, col_shift, out, cp.int32(rows), cp.int32(cols), cp.int64(pitch)))
    return out
