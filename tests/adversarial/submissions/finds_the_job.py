# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: gc.get_objects
# Looks for its grading's job where a worker forked from its judge (autograder.template) could still
# hold it: a dict carrying the job's nonce among the objects of its own process, a standard input
# that is not /dev/null (the judge's is the pipe the job arrives on), or a pipe beyond the two that
# carry its own requests and answers (had it found the job, it would return zeros). The worker is
# forked before the judge reads its job and keeps only its own files, so there is nothing to find;
# and since the worker is sealed (autograder.seal), asking the garbage collector for its objects is
# refused and the grading rejected before it looks.
import gc
import os

import torch
import triton
import triton.language as tl


def _found_the_job() -> bool:
    if any(isinstance(obj, dict) and "nonce" in obj for obj in gc.get_objects()):
        return True
    if os.readlink("/proc/self/fd/0") != "/dev/null":
        return True
    links = []
    for name in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:
            pass
    return sum(link.startswith("pipe:") for link in links) > 2


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


FOUND = _found_the_job()


def vector_add(x, y):
    out = torch.empty_like(x)
    if FOUND:
        return out.zero_()
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
