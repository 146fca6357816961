# expect: FAIL ERROR
# devices: cuda
# A grid that rounds down (rows // 32): right on the 1024x1024 and benchmark shapes, but the last
# partial row and column of tiles are never written on 127x129 or 1823x781 (and 1x4097 launches an
# empty grid).
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
    kernel((max(1, cols // 32), max(1, rows // 32)), (32, 8), (x, out, cp.int32(rows), cp.int32(cols)))
    return out
