# expect: FAIL ERROR
# devices: cuda
# The tiled transpose with padding, but no edge masks: the grid rounds up, so on 127x129 or 1823x781
# the edge blocks read past the end of x and write past the end of the output.
import cupy as cp

SOURCE = r"""
extern "C" __global__ void transpose_kernel(const float* x, float* out, int rows, int cols) {
    __shared__ float tile[32][33];
    int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 32 + threadIdx.y;
    for (int k = 0; k < 32; k += 8) tile[threadIdx.y + k][threadIdx.x] = x[(long long)(row + k) * cols + col];
    __syncthreads();
    int out_col = blockIdx.y * 32 + threadIdx.x, out_row = blockIdx.x * 32 + threadIdx.y;
    for (int k = 0; k < 32; k += 8) out[(long long)(out_row + k) * rows + out_col] = tile[threadIdx.x][threadIdx.y + k];
}
"""
kernel = cp.RawKernel(SOURCE, "transpose_kernel")


def transpose(x):
    rows, cols = x.shape
    out = cp.empty((cols, rows), dtype=cp.float32)
    kernel(((cols + 31) // 32, (rows + 31) // 32), (32, 8), (x, out, cp.int32(rows), cp.int32(cols)))
    return out
