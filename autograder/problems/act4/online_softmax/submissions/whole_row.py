# expect: COMPILE_ERROR ERROR
# devices: cpu
# says: exceeds triton maximum tensor numel
# The fused softmax of Exercise 4.2 turned into a weighted sum: the whole row in one block. Rows
# past 2^20 elements need a block larger than Triton allows (on a GPU and under the interpreter):
# the row has to be streamed. CPU only: on a GPU the row of 1,000,003 elements before it already
# asks the compiler for a block of 2^20 floats, far beyond any register file, and how long that
# compilation takes is not what this case is about.
import torch
import triton
import triton.language as tl


@triton.jit
def whole_row_kernel(x_ptr, v_ptr, out_ptr, n_cols, x_row_stride, v_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    v = tl.load(v_ptr + row * v_row_stride + cols, mask=mask, other=0.0)
    p = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row, tl.sum(p * v, axis=0) / tl.sum(p, axis=0))


def online_softmax(x, v):
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    whole_row_kernel[(n_rows,)](x, v, out, n_cols, x.stride(0), v.stride(0), BLOCK_SIZE=triton.next_power_of_2(n_cols), num_warps=16)
    return out
