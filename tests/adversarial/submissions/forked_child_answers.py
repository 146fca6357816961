# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# Forks at import; the child writes a forged reply on the worker's channel to the judge, hoping the
# judge reads it in place of the worker's. A process forked in the worker has that channel closed
# before it runs a line, so the write fails and the honest kernel is graded as it is.
import os
import sys

import torch
import triton
import triton.language as tl

if os.fork() == 0:
    try:
        os.write(int(sys.argv[2]), b'{"loaded": true, "forged": true}\n' * 64)
    except OSError:
        pass
    os._exit(0)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
