# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: two lines starting with def
# The kernel's docstring holds a second "def add_kernel" that adds with NumPy: Triton's interpreter
# rewrites a kernel from the last line starting with "def ", its compiler from the first, so the
# front end compiled an honest-looking body while the interpreter ran NumPy (and a fresh rewrite had
# the same flaw). Two such lines in a kernel's source are refused (autograder.rewrites).
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    '''
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    x.handle.data = np.add(x.handle.data, y.handle.data)
    tl.store(out_ptr + offsets, x, mask=mask)
    """
'''
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + 0.0 * y, mask=mask)
    # """


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
