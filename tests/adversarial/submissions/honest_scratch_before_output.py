# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# Honest: a scratch buffer twice the output's size is written and freed before the output is
# allocated, so the caching allocator may hand the output the scratch's memory; what the scratch
# left past the output's end is not a store past its end.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    scratch = torch.empty(2 * n, dtype=x.dtype, device=x.device)
    add_kernel[grid](x, y, scratch, n, BLOCK_SIZE=1024)
    add_kernel[grid](x, y, scratch[n:], n, BLOCK_SIZE=1024)
    del scratch
    out = torch.empty_like(x)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out
