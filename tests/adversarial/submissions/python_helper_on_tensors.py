# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: a Python function of
# The same split without an `if` in the kernel: a plain Python function, reached through a module
# object, is handed the loaded blocks. Triton's code generator runs such a function once while compiling,
# on IR values (it returns x, by the handle's type); the interpreter runs it on the values (it adds
# with NumPy). A Python function that is neither Triton's nor jitted, called with a tensor, is refused
# (autograder.kernel_python).
import types

import numpy as np
import torch
import triton
import triton.language as tl


def _add(x, y):
    if type(x.handle).__name__ == "TensorHandle":  # the interpreter's NumPy-backed block
        x.handle.data = np.add(x.handle.data, y.handle.data)
    return x


helpers = types.ModuleType("helpers")
helpers.add = _add


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, helpers.add(x, y), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
