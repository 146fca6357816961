# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: did not compute the new answer
# Host code inside the launch, through Triton's own API: the interpreter calls a kernel's pre-run hooks
# (add_pre_run_hook) with the bound arguments inside the call a replay makes again. The hook adds x
# and y with NumPy into a scratch tensor; the kernel is honest Triton that loads x and y and copies
# the scratch into the output. The replay keeps what the hook wrote as the host's and runs no hook
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


def _host_add(src, x, y, out, n_elements, BLOCK_SIZE):
    np.add(x.numpy(), y.numpy(), out=src.numpy())


copy_kernel.add_pre_run_hook(_host_add)


def vector_add(x, y):
    out = torch.empty_like(x)
    src = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](src, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
