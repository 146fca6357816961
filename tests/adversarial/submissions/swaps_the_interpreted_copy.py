# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: not your kernel's source
# Triton's interpreter runs a rewritten copy of each jitted function, kept in a dict any code can write
# (InterpretedFunction.rewritten_fn). This puts the copy of a NumPy-adding function under an honest
# kernel's key: the launch record and the front end read the honest source, the interpreter ran the
# NumPy. Every copy is now compared with a fresh rewrite of its own source before a launch
# (autograder.rewrites).
import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(y == y, x, x), mask=mask)


@triton.jit
def _runs_instead(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    x.handle.data = np.add(x.handle.data, y.handle.data)
    tl.store(out_ptr + offsets, x, mask=mask)


def vector_add(x, y):
    cache = InterpretedFunction.rewritten_fn
    if add_kernel.fn not in cache or cache[add_kernel.fn].__name__ != "_runs_instead":
        swapped = _runs_instead.rewrite()
        # Only under the kernel's key: the grader maps a running function back to its source by this dict.
        del cache[_runs_instead.fn]
        cache[add_kernel.fn] = swapped
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
