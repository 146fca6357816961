# expect: COMPILE ERROR
# problem: act0.vector_add
# devices: cuda
# A tile larger than shared memory (a 256 x 256 float32 dot stages 512 KiB of operands; an H100 has
# 227 KiB a block): Triton refuses it when compiling (OutOfResources). At 512 x 512 the compile alone
# took 157 s on an H100 host, past the GPU run's per-test limit.
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
    add_kernel[(1,)](x, y, out, x.numel(), TILE=256, num_stages=4)
    return out
