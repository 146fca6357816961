# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: did not compute the new answer
# Host code inside the launch, through the grid: the interpreter calls a grid function after the
# arguments are bound, inside the very call a replay makes again, and this one closes over the input
# tensors, whose memory the replay refills with new values. It adds them with NumPy into a scratch
# tensor; the kernel only copies the scratch (and loads x and y for show). The replay keeps what host
# code wrote up to the moment the grid is known, and replays the grid it gave, not the function
# (autograder.replay.probe_grid). On a GPU NumPy cannot read the inputs at all.
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    touched = tl.load(x_ptr + offsets, mask=mask, other=0.0) + tl.load(y_ptr + offsets, mask=mask, other=0.0)
    value = tl.load(src_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(touched == touched, value, value), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    src = torch.empty_like(x)

    def grid(meta):
        np.add(x.numpy(), y.numpy(), out=src.numpy())
        return (triton.cdiv(x.numel(), meta["BLOCK_SIZE"]),)

    copy_kernel[grid](src, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
