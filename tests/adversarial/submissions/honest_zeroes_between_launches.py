# expect: PASS
# problem: act0.vector_add
# devices: cpu
# Honest, in four launches with host bookkeeping between them: x is accumulated into a zeroed
# buffer with atomics and copied to the output, the buffer is zeroed again on the host, y is
# accumulated into it and added to the output. A replay on other values of the inputs must write
# the host's zeros before the third launch, as the call did, or it would add x to the answer twice
# (autograder.replay): this case fails if the replay keeps only what tensors held at first use.
import torch
import triton
import triton.language as tl


@triton.jit
def accumulate_kernel(src_ptr, acc_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.atomic_add(acc_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def add_into_kernel(acc_ptr, out_ptr, n_elements, FIRST: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    value = tl.load(acc_ptr + offsets, mask=mask)
    if not FIRST:
        value += tl.load(out_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, value, mask=mask)


def vector_add(x, y):
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    acc = torch.zeros_like(x)
    out = torch.empty_like(x)
    accumulate_kernel[grid](x, acc, n, BLOCK_SIZE=1024)
    add_into_kernel[grid](acc, out, n, FIRST=True, BLOCK_SIZE=1024)
    acc.zero_()
    accumulate_kernel[grid](y, acc, n, BLOCK_SIZE=1024)
    add_into_kernel[grid](acc, out, n, FIRST=False, BLOCK_SIZE=1024)
    return out
