# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: did not compute the new answer
# The host's answer enters between two launches rather than before the first: a first kernel loads
# both inputs and fills a scratch buffer, NumPy then writes its sum into that buffer through a view
# of its memory (no PyTorch operator), and a second kernel copies the buffer into the output. Every
# byte of the output is stored by a kernel of this file, which read every input. The replay keeps
# what host code wrote into a tensor after a kernel held it and writes the same bytes before the
# next launch: the old sum, not the sum of the new values (autograder.replay).
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, y_ptr, scratch_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    both = tl.load(x_ptr + offsets, mask=mask, other=0.0) * tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(scratch_ptr + offsets, both, mask=mask)


@triton.jit
def copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    n = x.numel()
    scratch = torch.empty_like(x)
    touch_kernel[(triton.cdiv(n, 1024),)](x, y, scratch, n, BLOCK_SIZE=1024)
    scratch.numpy()[...] = x.numpy() + y.numpy()
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(n, 1024),)](scratch, out, n, BLOCK_SIZE=1024)
    return out
