# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: sys._getframe
# A function compiled under typing.py's file name and named _caller, the name of a standard-library
# function the seal lets read its caller's frame. compile() is refused to the learner's code for an
# installed file's name, so sched.scheduler.run (an installed file, the nearest frame when it runs)
# makes the call, drawing it from itertools.starmap in C. Called, the function hands back the
# learner's own frame, and f_back from it reaches the worker's call and its locals. This one only
# looks and adds with an honest kernel (it passed at full marks on CPU while the seal knew consumers
# by file and name rather than by their code objects).
import itertools
import sched
import typing

import torch
import triton
import triton.language as tl

SOURCE = "import sys\ndef _caller(depth=1, default='__main__'):\n    return sys._getframe(depth + 1)\n"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _frame_of_the_caller():
    box: list = []
    scheduler = sched.scheduler()
    scheduler.enter(0, 1, box.extend, (itertools.starmap(compile, [(SOURCE, typing.__file__, "exec")]),))
    scheduler.run()
    namespace: dict = {}
    exec(box[0], namespace)
    return namespace["_caller"](0)


def vector_add(x, y):
    found = []
    frame = _frame_of_the_caller()
    while frame is not None:
        if "self" in frame.f_locals:
            found.append(type(frame.f_locals["self"]).__name__)
        frame = frame.f_back
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
