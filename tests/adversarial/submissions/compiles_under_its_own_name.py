# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: compiling code named
# Code compiled from a string under the submission's own file name, given relative to the working
# folder (the seal refused absolute names only): whatever kernel that code defines, read from another
# student's notebook or anywhere else, would pass for one of this file's, since a kernel is the
# learner's by its file. The honest kernel below is only the decoy the source check looks for.
import linecache
import os

import torch
import triton
import triton.language as tl

GENERATED = """
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
"""
name = os.path.relpath(__file__)
# Where Triton reads a kernel's source from: the generated text, under the file's name.
linecache.cache[name] = (len(GENERATED), None, GENERATED.splitlines(True), name)
scope = {"__name__": __name__, "__file__": __file__}
exec(compile(GENERATED, name, "exec"), scope)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pass


def vector_add(x, y):
    out = torch.empty_like(x)
    scope["add_kernel"][(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
