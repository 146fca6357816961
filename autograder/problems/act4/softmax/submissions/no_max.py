# expect: FAIL
# devices: cpu cuda
# No subtraction of the row maximum: exp() overflows on rows shifted by up to +-120.
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK_SIZE: tl.constexpr):
    """Program pid writes the softmax of row pid; the whole row lives in registers between its one
    read and its one write, so the kernel moves 4 bytes in and 4 bytes out per element."""
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    # BLOCK_SIZE is the next power of two at or above n_cols: the lanes past the end of the row
    # read -inf, which adds nothing to the max and exp(-inf) = 0 adds nothing to the sum.
    mask = cols < n_cols
    x = tl.load(x_ptr + row.to(tl.int64) * x_row_stride + cols, mask=mask, other=-float("inf"))
    # Subtracting the row's maximum keeps exp() below 1: without it a row with values near 100
    # overflows float32 (exp(89) is already inf) and the answer is inf / inf = NaN.
    x = x
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row.to(tl.int64) * out_row_stride + cols, numerator / denominator, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return the softmax of each row of x, computed by softmax_kernel.

    x: a 2-D float32 tensor of shape (M, N) with 1 <= N <= 16384, rows contiguous.
    Returns a new contiguous float32 tensor of shape (M, N); x is left unchanged.
    Traffic: reads M*N floats and writes M*N floats, 8 bytes per element.
    """
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    block_size = triton.next_power_of_2(n_cols)
    # Enough warps that each thread holds at most 16 values of its row: a long row spread over
    # too few threads spills registers, a short row over too many leaves threads idle.
    num_warps = min(16, max(1, block_size // 512))
    softmax_kernel[(n_rows,)](
        x, out, n_rows, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=block_size, num_warps=num_warps
    )
    return out
