# expect: REJECT
# problem: act0.vector_add
# devices: cuda
# Honest for the first few calls of each input buffer (the checked ones, it hopes), the library
# after that. Every call, timed or not, is profiled and checked.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def honest_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out

_calls = {}


def vector_add(x, y):
    key = x.data_ptr()
    _calls[key] = _calls.get(key, 0) + 1
    return honest_add(x, y) if _calls[key] <= 3 else torch.add(x, y)
