# expect: PASS REJECT
# problem: act0.vector_add
# devices: cpu cuda
# The reverse: torch.add while it sees a profiler, its own kernel otherwise. Every call is watched:
# a check that saw the watch would run torch.add in every call (rejected); this one does not see it
# (CPU and H100), so every call, timed ones included, runs its own kernel: an honest pass.
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


def vector_add(x, y):
    if torch._C._autograd._profiler_enabled():
        return torch.add(x, y)
    return honest_add(x, y)
