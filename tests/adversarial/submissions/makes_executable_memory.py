# expect: ERROR
# problem: act0.vector_add
# devices: cpu
# says: Operation not permitted
# Asks for anonymous memory it may write and run, as a JIT does (numba, llvmlite, or machine code of
# its own): native code made in the worker needs no file at all. The worker's system call filter
# refuses new executable memory that is not a file's mapping (autograder.seccomp.forbid_new_code). The
# kernel below is honest, so the mapping alone decides the verdict.
import mmap

import torch
import triton
import triton.language as tl

page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
