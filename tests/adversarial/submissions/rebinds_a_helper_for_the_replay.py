# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: was not what your call ran
# The call's kernel stores a host-made answer through an honest jitted helper; just before returning,
# the function rebinds that helper's global name to one that adds with NumPy on the blocks, so the
# replay, which runs after the call, looked the new helper up. Each replayed launch must see what the
# call's launch saw (globals, helpers), and the replay's own front-end findings are judged
# (autograder.replay, worker_calls.replay).
import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import TensorHandle


def _np_add(a, b):
    return tl.tensor(TensorHandle(a.handle.data + b.handle.data, tl.float32), a.type)


@triton.jit
def _copy_combine(src_ptr, x_ptr, y_ptr, offs, mask):
    touched = tl.load(x_ptr + offs, mask=mask, other=0.0) + tl.load(y_ptr + offs, mask=mask, other=0.0)
    value = tl.load(src_ptr + offs, mask=mask)
    return tl.where(touched == touched, value, value)


@triton.jit
def _np_combine(src_ptr, x_ptr, y_ptr, offs, mask):
    return _np_add(tl.load(x_ptr + offs, mask=mask, other=0.0), tl.load(y_ptr + offs, mask=mask, other=0.0))


combine = _copy_combine


@triton.jit
def add_kernel(src_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, combine(src_ptr, x_ptr, y_ptr, offsets, mask), mask=mask)


def vector_add(x, y):
    global combine
    combine = _copy_combine
    src = torch.from_numpy(np.add(x.numpy(), y.numpy()))
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](src, x, y, out, x.numel(), BLOCK_SIZE=1024)
    combine = _np_combine
    return out
