# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: does not compile for a GPU
# Adds with NumPy inside a kernel (numpy_in_kernel), but launches it inside a recording of its own
# (autograder.interpreter.run_recorded, which anyone can call), into a scratch tensor, then copies
# the scratch into the output with a kernel that loads both inputs, as numpy_then_touch_inputs does.
# When the guard's hooks wrote only into the nearest recording, the worker's never heard of the
# kernel no GPU compiler accepts: PASS at full marks on a CPU. Every recording on the stack hears of
# every launch now.
import numpy as np
import torch
import triton
import triton.language as tl

import autograder.interpreter


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    x.handle.data = np.add(x.handle.data, y.handle.data)
    tl.store(out_ptr + offsets, x, mask=mask)


@triton.jit
def copy_kernel(src_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    touched = tl.load(x_ptr + offsets, mask=mask, other=0.0) * 0.0 + tl.load(y_ptr + offsets, mask=mask, other=0.0) * 0.0
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask) + touched, mask=mask)


def vector_add(x, y):
    grid = (triton.cdiv(x.numel(), 1024),)
    scratch, out = torch.empty_like(x), torch.empty_like(x)
    autograder.interpreter.run_recorded(lambda: add_kernel[grid](x, y, scratch, x.numel(), BLOCK_SIZE=1024))
    copy_kernel[grid](scratch, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
