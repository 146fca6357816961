# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: marked as one of Triton's builtins
# A plain Python function marked __triton_builtin__ is called by Triton's code generator with the
# compiler's state (it returns x: a wrong kernel on a GPU) and by the interpreter on the values (it
# adds with NumPy). A builtin mark on a function from outside Triton is refused (autograder.kernel_python).
import numpy as np
import torch
import triton
import triton.language as tl


def combine(x, y, _semantic=None):
    if _semantic is not None:
        return x
    x.handle.data = np.add(x.handle.data, y.handle.data)
    return x


combine.__triton_builtin__ = True


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, combine(x, y), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
