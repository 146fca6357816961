# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: reads the global ZERO
# Learner code that runs inside the replay itself: a global constexpr whose value is an int subclass
# with a __repr__ that adds x and y with NumPy into a scratch buffer. The grader's own checks call
# repr on the constexprs a kernel names before every launch and at every load and store, the
# replay's included, so the scratch held the new sum when the copy kernel loaded it. A kernel now reads
# plain data only (a constexpr around an int subclass is not: autograder.kernel_python), and the replay
# checks every byte a replayed kernel loads against what it wrote and the kernels stored
# (autograder.replay).
import numpy as np
import torch
import triton
import triton.language as tl

_live = {}


class _Zero(int):
    def __repr__(self):
        t = _live.get("t")
        if t is not None:
            x, y, src = t
            np.add(x.numpy(), y.numpy(), out=src.numpy())
        return "0"


ZERO = tl.constexpr(_Zero(0))


@triton.jit
def add_kernel(src_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE) + ZERO
    mask = offsets < n_elements
    touched = tl.load(x_ptr + offsets, mask=mask, other=0.0) + tl.load(y_ptr + offsets, mask=mask, other=0.0)
    value = tl.load(src_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(touched == touched, value, value), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    src = torch.empty_like(x)
    _live["t"] = (x, y, src)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](src, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
