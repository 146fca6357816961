# expect: REJECT
# problem: act0.vector_add
# devices: cuda
# says: PyTorch mode
# On a GPU the worker sends the judge the output's address (data_ptr()) and layout, and the judge
# maps that memory. A TorchFunctionMode entered as the module loads and never left answers the
# worker's data_ptr() of the returned output with the address of x + y made by PyTorch then, outside
# every timed window; the kernel only copies x, the work the launch record sees.
import torch
import triton
import triton.language as tl
from torch.overrides import TorchFunctionMode

held = {}


class PointsAtTheLibrarysSum(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.data_ptr and args and args[0] is held.get("out"):
            held["sum"] = torch.add(held["x"], held["y"])
            return held["sum"].data_ptr()
        return func(*args, **(kwargs or {}))


PointsAtTheLibrarysSum().__enter__()


@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    held.update(out=out, x=x, y=y)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
    return out
