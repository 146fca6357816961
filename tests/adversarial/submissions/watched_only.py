# expect: PASS REJECT
# problem: act0.vector_add
# devices: cpu cuda
# Uses its own kernel only while a profiler is running and torch.add otherwise, hoping the profiled
# call is a special one. Every call the grader makes is watched, correctness and timed calls alike.
# torch's _profiler_enabled() does not report the grader's watch (seen on a CPU and on an H100), so
# every call runs torch.add, which the watch sees: rejected. A check that did see the watch would
# make every call honest: a pass.
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
        return honest_add(x, y)
    return torch.add(x, y)
