# expect: COMPILE ERROR
# problem: act0.vector_add
# devices: cuda
# A tile far larger than shared memory: Triton refuses it when compiling (OutOfResources).
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, TILE: tl.constexpr):
    rows = tl.arange(0, TILE)[:, None]
    cols = tl.arange(0, TILE)[None, :]
    a = tl.load(x_ptr + rows * TILE + cols, mask=rows * TILE + cols < n_elements, other=0.0)
    b = tl.load(y_ptr + rows * TILE + cols, mask=rows * TILE + cols < n_elements, other=0.0)
    tl.store(out_ptr + rows * TILE + cols, tl.dot(a, b), mask=rows * TILE + cols < n_elements)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(1,)](x, y, out, x.numel(), TILE=512, num_stages=4)
    return out
