# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: does not compile for a GPU
# A kernel whose body branches on a constexpr global: False, it is plain Triton (and stores zeros);
# True, it adds with NumPy, which no GPU compiler accepts. Each call launches it once on one element
# with the flag False, so that Triton's front end compiles it (as the grader checks on a CPU), then
# sets the flag and launches it on the whole input. On a GPU Triton refuses a kernel whose globals
# changed since it was compiled; the grader's front-end check had cached its verdict per kernel and
# specialization, and the interpreter reads the globals afresh at every launch.
import numpy as np
import torch
import triton
import triton.language as tl

ADD_WITH_NUMPY = tl.constexpr(False)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if ADD_WITH_NUMPY:
        x.handle.data = np.add(x.handle.data, y.handle.data)
        tl.store(out_ptr + offsets, x, mask=mask)
    else:
        tl.store(out_ptr + offsets, x * 0.0 + y * 0.0, mask=mask)


def vector_add(x, y):
    global ADD_WITH_NUMPY
    out = torch.empty_like(x)
    ADD_WITH_NUMPY = tl.constexpr(False)
    add_kernel[(1,)](x[:1], y[:1], out[:1], 1, BLOCK_SIZE=1024)
    ADD_WITH_NUMPY = tl.constexpr(True)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
