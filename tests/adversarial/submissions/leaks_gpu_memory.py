# expect: PASS ERROR
# problem: act0.vector_add
# devices: cuda
# Keeps every output alive and opens a stream per call; its process ends with its grading, and the
# next exercise finds the GPU's memory back.
import torch
import triton
import triton.language as tl

_kept = []


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    _kept.append(torch.cuda.Stream())
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    _kept.append(out)
    return out
