# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: is a _Count object
# n_elements handed to the kernel as an int subclass whose comparison adds x and y with NumPy into a
# scratch buffer: Triton's interpreter compares integer arguments with the int32 range inside every
# launch, the replay's included. A launch's arguments must now be tensors or plain values
# (autograder.kernel_python), and a replay gets built-in copies of them (autograder.replay).
import numpy as np
import torch
import triton
import triton.language as tl


class _Count(int):
    def __new__(cls, value, work):
        self = super().__new__(cls, value)
        self.work = work
        return self

    def __ge__(self, other):
        x, y, src = self.work
        np.add(x.numpy(), y.numpy(), out=src.numpy())
        return int(self) >= other


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
    add_kernel[(triton.cdiv(x.numel(), 1024),)](src, x, y, out, _Count(x.numel(), (x, y, src)), BLOCK_SIZE=1024)
    return out
