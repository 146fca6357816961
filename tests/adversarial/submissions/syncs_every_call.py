# expect: REJECT
# problem: act0.vector_add
# devices: cuda
# An honest kernel behind a device-wide wait in every call. The GPU then sits idle while the host
# launches each call, and idle time cannot be told apart from work done in another process's context
# (which the profiler does not see either): the call is refused, with a message that names the wait.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    torch.cuda.synchronize()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
