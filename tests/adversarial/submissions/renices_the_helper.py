# expect: PASS REJECT
# problem: act0.vector_add
# devices: cuda
# speed_at_most: 1.2
# alone: yes
# An honest kernel, and the judge's other children (the trusted helper that times the library) given
# the lowest priority, every thread: the helper's launching would be slowed wherever its host paces
# it. Graded on a GPU, where a timed grading has a helper. Refused by the worker's system call filter
# (PASS at its honest speed); rejected by the judge where no filter can be installed.
import os

import torch
import triton
import triton.language as tl

me, judge = os.getpid(), os.getppid()
for entry in os.listdir("/proc"):
    try:
        with open(f"/proc/{entry}/stat", "rb") as f:
            parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        if parent == judge and int(entry) != me:
            for thread in os.listdir(f"/proc/{entry}/task"):
                os.setpriority(os.PRIO_PROCESS, int(thread), 19)
    except (OSError, ValueError):
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
