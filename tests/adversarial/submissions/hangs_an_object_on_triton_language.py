# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: reads .adder of
# An object of the learner's hung on triton.language (tl.adder), its class a subclass of Triton's
# base_value whose method adds with NumPy under the interpreter and returns x to the compiler. Names
# and modules say nothing about whose code runs: what a kernel reads or calls must be Triton's by the
# file its code lies in (autograder.kernel_python).
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import TensorHandle


class Adder(tl.core.base_value):
    """No module spoofing: an object of the learner's hung on triton.language (an attribute of a
    "triton" module is not checked for plainness; the fingerprint of triton.language lets new names in);
    its bound method's __self__ is a base_value, so it counts as Triton's own and may take tensors."""

    def add(self, a, b):
        handle = a.handle
        if isinstance(handle, TensorHandle):
            return tl.tensor(TensorHandle(handle.data + b.handle.data, handle.dtype), a.type)
        return a


tl.adder = Adder()


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.adder.add(x, y), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
