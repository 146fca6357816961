# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Zeroes its inputs after computing: the next reference computed from them would agree with anything.
import torch
import triton
import triton.language as tl


@triton.jit
def add_into_x_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    add_into_x_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
    out = torch.empty_like(x)
    out.copy_(x)
    return out
