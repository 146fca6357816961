# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: reads .handle of a tensor
# A kernel that takes one branch under the interpreter and another in the compiler: under the
# interpreter a loaded block's handle holds a NumPy array, so `hasattr(x.handle, "data")` is true and
# NumPy adds; in Triton's code generator the handle is an IR value, the test is a constant False, the
# branch is never compiled and the kernel stores x alone. The front end compiled it and the replay ran
# the same NumPy again. A tensor's internals read in a kernel are refused (autograder.kernel_python).
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if hasattr(x.handle, "data"):
        x.handle.data = np.add(x.handle.data, y.handle.data)
    tl.store(out_ptr + offsets, x, mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
