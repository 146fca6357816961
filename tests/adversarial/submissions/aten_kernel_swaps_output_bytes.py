# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: aten::view.dtype
# No mode and no replaced name: a kernel of its own for PyTorch's existing operator aten::view.dtype,
# registered with torch.library under AutogradCPU, which every later view of a CPU tensor as bytes
# runs, the worker's included. Asked for the bytes of the output object itself, it answers with those
# of x + y from NumPy; any other tensor (the launch record's detached copy) gets the real view.
import numpy as np
import torch
import triton
import triton.language as tl

held = {}
library = torch.library.Library("aten", "IMPL")


def view_as_bytes(self, dtype):
    if self is held.get("out") and dtype == torch.uint8:
        return torch.from_numpy((held["out"].numpy() + held["aside"].numpy()).view(np.uint8))
    with torch._C._AutoDispatchBelowAutograd():
        return torch.ops.aten.view.dtype(self, dtype)


library.impl("view.dtype", view_as_bytes, "AutogradCPU")


@triton.jit
def copy_two_kernel(x_ptr, y_ptr, out_ptr, aside_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
    tl.store(aside_ptr + offsets, tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out, aside = torch.empty_like(x), torch.empty_like(y)
    held.update(out=out, aside=aside)
    copy_two_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, aside, x.numel(), BLOCK_SIZE=1024)
    return out
