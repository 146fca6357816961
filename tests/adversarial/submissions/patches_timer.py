# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# Replaces the event timer, the clock and the comparison in its own process. The judge's events and
# comparisons live in another process: the honest kernel is graded as if nothing was patched.
import time

import torch
import triton
import triton.language as tl

torch.cuda.Event.elapsed_time = lambda self, end: 1e-6
time.perf_counter = lambda: 0.0
torch.allclose = lambda *args, **kwargs: True


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
