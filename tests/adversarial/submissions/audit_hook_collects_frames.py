# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: sys.addaudithook
# An audit hook of its own sees the arguments of every audited call in the process, the frames
# that library code asks for among them (logging, typing and the grader's own seal take frames),
# and from a frame every caller's locals follow. The sealed worker (autograder.seal) refuses the
# learner's code a hook of its own.
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out


frames = []


def _collect(event, args):
    if event == "sys._getframe" and args:
        frames.append(args[0])


sys.addaudithook(_collect)


def vector_add(x, y):
    return _add(x, y)
