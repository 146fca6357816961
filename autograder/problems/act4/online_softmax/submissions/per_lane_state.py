# expect: PASS
# devices: cpu cuda
# An honest one-pass kernel in another shape: each lane of the block keeps its own running maximum
# and sums over the elements it sees (one per block), and the lanes' states are merged once, after
# the loop, by the same rescaling. No reduction inside the loop; each element is still read once.
import os

import torch
import triton
import triton.language as tl


def block_size() -> int:
    return 16384 if os.environ.get("TRITON_INTERPRET") == "1" else 2048


@triton.jit
def per_lane_kernel(x_ptr, v_ptr, out_ptr, n_cols, x_row_stride, v_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    v_row = v_ptr + row * v_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    m = tl.full((BLOCK_SIZE,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_SIZE,), tl.float32)
    a = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=-float("inf"))
        v = tl.load(v_row + offs, mask=mask, other=0.0)
        m_new = tl.maximum(m, x)
        # A lane that has seen only -inf (past the end of a short row) keeps m = -inf: its
        # exponentials would be exp(-inf - -inf) = NaN, so it is left at zero instead.
        seen = m_new > -float("inf")
        alpha = tl.where(seen, tl.exp(m - m_new), 0.0)
        p = tl.where(seen, tl.exp(x - m_new), 0.0)
        l = l * alpha + p
        a = a * alpha + p * v
        m = m_new
    # Merge the lanes: rescale every lane's sums to the row's maximum, then add them up.
    m_row = tl.max(m, axis=0)
    scale = tl.where(m > -float("inf"), tl.exp(m - m_row), 0.0)
    tl.store(out_ptr + row, tl.sum(a * scale, axis=0) / tl.sum(l * scale, axis=0))


def online_softmax(x, v):
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    per_lane_kernel[(n_rows,)](x, v, out, n_cols, x.stride(0), v.stride(0), BLOCK_SIZE=block_size(), num_warps=8)
    return out
