# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: gc.get_objects
# logging's formatException is one of the few functions the seal lets read frames: it hands the
# traceback it is given to the traceback module, which reads tb_frame. A traceback of this file's
# making has tb_frame as a property over a deque's extend (C, so no frame of this file is the
# nearest when it runs), which drains an iterator asking the collector for its oldest objects: the
# worker's among them, handed over at the reader's own call site. This one only takes them and adds
# with an honest kernel (the list came back, unseen, on the published seal before readers were
# limited to the calls that hand over frames).
import collections
import gc
import logging

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _oldest_objects() -> list:
    found: collections.deque = collections.deque()

    class Traceback:
        tb_frame = property(found.extend)
        tb_lasti = 0
        tb_next = None

        def __iter__(self):
            return map(gc.get_objects, [2])

    try:
        logging.Formatter().formatException((ValueError, ValueError("x"), Traceback()))
    except AttributeError:
        pass
    return found[0] if found else []


def vector_add(x, y):
    _oldest_objects()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
