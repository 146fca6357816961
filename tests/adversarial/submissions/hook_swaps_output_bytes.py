# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: PyTorch mode
# A TorchFunctionMode entered as the module loads and never left: PyTorch's per-thread mode stack is
# C state no fingerprint sees, and the mode runs inside every tensor operation of the thread, the
# worker's own included. The kernel only copies x into the output and y aside; when the worker makes
# the output contiguous to send its bytes (that very tensor object), the mode answers with x + y from
# NumPy, while the launch record, reading a detached copy, sees exactly what the kernel stored.
import numpy as np
import torch
import triton
import triton.language as tl
from torch.overrides import TorchFunctionMode

held = {}


class SendsNumpysSum(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.contiguous and args and args[0] is held.get("out"):
            return torch.from_numpy(held["out"].numpy() + held["aside"].numpy())
        return func(*args, **(kwargs or {}))


SendsNumpysSum().__enter__()


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
