# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: does not compile for a GPU
# Loads its blocks with tl.load and stores the sum with tl.store, but adds them with NumPy inside the
# kernel: under the Triton interpreter a block's values are a NumPy array and the body is plain
# Python, so the answer is right and every byte is the kernel's. No GPU compiler accepts the kernel
# (on a GPU it is a COMPILE ERROR); on a CPU the grader compiles it with Triton's front end too.
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    x.handle.data = np.add(x.handle.data, y.handle.data)
    tl.store(out_ptr + offsets, x, mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
