# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: reads the global Table
# A class of the learner's marked __triton_aggregate__ (Triton lets such globals in) whose
# __class_getitem__ adds the blocks with NumPy, indexed in the kernel as Table[x, y]. A class a kernel
# reads must hold Triton's or Python's code only (autograder.kernel_python).
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import TensorHandle


class Table:
    """A class is 'plain' to the front end (types count as plain), and subscripting it runs
    __class_getitem__ directly in the code generator (no call_Function check)."""

    __triton_aggregate__ = True

    def __class_getitem__(cls, pair):
        a, b = pair
        if isinstance(a.handle, TensorHandle):
            return tl.tensor(TensorHandle(a.handle.data + b.handle.data, a.handle.dtype), a.type)
        return a


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, Table[x, y], mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
