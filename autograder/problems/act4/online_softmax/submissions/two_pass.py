# expect: REJECT
# devices: cpu
# says: loaded some elements of x 2 times
# The safe softmax in two passes: one over the row for its maximum, a second for the sums. Right
# answers, but x is read twice; the interpreter counts the loads of every byte and refuses it. (On a
# GPU nothing counts loads: there the second pass costs its bytes, and its speed shows it.)
import os

import torch
import triton
import triton.language as tl


def block_size() -> int:
    return 16384 if os.environ.get("TRITON_INTERPRET") == "1" else 4096


@triton.jit
def two_pass_kernel(x_ptr, v_ptr, out_ptr, n_cols, x_row_stride, v_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    v_row = v_ptr + row * v_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    m = -float("inf")
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    l = 0.0
    a = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=-float("inf"))
        v = tl.load(v_row + offs, mask=mask, other=0.0)
        p = tl.exp(x - m)
        l += tl.sum(p, axis=0)
        a += tl.sum(p * v, axis=0)
    tl.store(out_ptr + row, a / l)


def online_softmax(x, v):
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    two_pass_kernel[(n_rows,)](x, v, out, n_cols, x.stride(0), v.stride(0), BLOCK_SIZE=block_size(), num_warps=8)
    return out
