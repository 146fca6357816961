# expect: PASS REJECT
# problem: act0.vector_add
# devices: cpu cuda
# An honest kernel, and at import the judge (this process's parent) set to the lowest priority and
# moved onto one core: both would outlive this process, into the library's timing once it is gone,
# where any other load on that core would slow the baseline. The worker's system call filter refuses
# both (autograder.seccomp: scheduling of no process but the caller's own thread), so the kernel is
# graded as it is (PASS); where no filter can be installed (not Linux on x86-64) the judge finds its
# scheduling changed at the end and rejects the grading (autograder.pinning).
import os

import torch
import triton
import triton.language as tl

judge = os.getppid()
try:
    os.setpriority(os.PRIO_PROCESS, judge, 19)
    os.sched_setaffinity(judge, {min(os.sched_getaffinity(judge))})
except PermissionError:
    pass

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
