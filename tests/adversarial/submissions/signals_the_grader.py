# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# A process may signal every process of its user: SIGSTOP the trusted helper while it times the
# library (the launching of a window that stops halfway is timed), kill the judge, or stop every
# grading on a shared host at once (kill(-1, ...)). Where Landlock scopes signals (ABI 6) nothing
# outside the grading is reached; everywhere, the worker's system call filter refuses a signal to
# the judge, every process above it (the one that starts judges, a Jupyter server, an instructor's
# grading run), the helper, a process group or everyone, and tkill (autograder.seccomp.SIGNALLING).
# This submission sends signal 0, which checks and delivers nothing, to each of them, and answers
# wrongly (FAIL) wherever one would have gone through: the kernel must PASS.
import os

import torch
import triton
import triton.language as tl


def _above(pid: int) -> list[int]:
    chain = []
    try:
        while True:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
            if pid <= 1:
                return chain
            chain.append(pid)
    except OSError:
        return chain


def _reached() -> int:
    reached = 0
    for pid in (os.getppid(), *_above(os.getppid()), -1, 0, -os.getpgid(os.getppid())):
        try:
            os.kill(pid, 0)
            reached += 1
        except OSError:
            pass
    return reached


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out + 1.0 if _reached() else out
