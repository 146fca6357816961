# expect: FAIL
# devices: cpu cuda
# The running weighted sum is not rescaled when the maximum grows (the running sum is): the blocks
# summed before a new maximum keep weights relative to the old one, far too large, and in every row
# whose maximum climbs along it the answer lands on the wrong part of the row.
import os

import torch
import triton
import triton.language as tl


def block_size() -> int:
    """Elements of a row each step of the loop loads, per input. Under the Triton interpreter (no GPU)
    every step costs Python time, so the blocks are larger there."""
    return 16384 if os.environ.get("TRITON_INTERPRET") == "1" else 4096


@triton.jit
def online_softmax_kernel(x_ptr, v_ptr, out_ptr, n_cols, x_row_stride, v_row_stride, BLOCK_SIZE: tl.constexpr):
    """Program pid writes out[pid] = sum_j softmax(x[pid])_j v[pid, j], reading row pid of x and of v
    once, BLOCK_SIZE elements at a time."""
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    v_row = v_ptr + row * v_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    # The running state of the row: its maximum so far m, and the sums l = sum exp(x_j - m) and
    # a = sum exp(x_j - m) v_j over the elements seen, both relative to that maximum.
    m = -float("inf")
    l = 0.0
    a = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        # Lanes past the end read x = -inf: they leave the maximum alone and exp(-inf) = 0 adds nothing.
        x = tl.load(x_row + offs, mask=mask, other=-float("inf"))
        v = tl.load(v_row + offs, mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        # What was summed relative to the old maximum is rescaled to the new one: exp(m - m_new) <= 1
        # (0 on the first block, where m = -inf and the sums are still 0).
        alpha = tl.exp(m - m_new)
        p = tl.exp(x - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        a = a + tl.sum(p * v, axis=0)  # the mistake: a * alpha, like l
        m = m_new
    # One division, at the very end.
    tl.store(out_ptr + row, a / l)


def online_softmax(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Return out[i] = sum_j softmax(x[i])_j * v[i, j], computed by online_softmax_kernel.

    x, v: 2-D float32 tensors of the same shape (M, N), N >= 1 (rows of millions of elements
    included), rows contiguous.
    Returns a new float32 tensor of shape (M,); x and v are left unchanged.
    Traffic: reads x and v once, 8 bytes per element, and writes 4 bytes per row.
    """
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    # One program per row; each loads 2 x 4096 floats per step with 8 warps: 16 of each per thread.
    online_softmax_kernel[(n_rows,)](
        x, v, out, n_cols, x.stride(0), v.stride(0), BLOCK_SIZE=block_size(), num_warps=8
    )
    return out
