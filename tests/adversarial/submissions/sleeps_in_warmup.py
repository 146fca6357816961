# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# Slow on its first calls (the grader's warm-up), fast afterwards: the timed calls are honest anyway.
import time

import torch
import triton
import triton.language as tl

_calls = [0]


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    _calls[0] += 1
    if _calls[0] <= 3:
        time.sleep(0.2)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
