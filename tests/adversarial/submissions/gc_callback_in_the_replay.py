# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: gc.callbacks
# A function added to gc.callbacks (no audit event) runs at every garbage collection, inside the
# replayed launches too, where it refilled a scratch buffer with the new sum. gc.callbacks is part of
# the seal's fingerprint on a CPU (autograder.fingerprint).
import gc

import numpy as np
import torch
import triton
import triton.language as tl

_live = {}


def _on_gc(phase, info):
    t = _live.get("t")
    if t is not None:
        x, y, src = t
        np.add(x.numpy(), y.numpy(), out=src.numpy())


gc.callbacks.append(_on_gc)


@triton.jit
def add_kernel(src_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    touched = tl.load(x_ptr + offsets, mask=mask, other=0.0) + tl.load(y_ptr + offsets, mask=mask, other=0.0)
    value = tl.load(src_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(touched == touched, value, value), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    src = torch.empty_like(x)
    np.add(x.numpy(), y.numpy(), out=src.numpy())
    _live["t"] = (x, y, src)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](src, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
