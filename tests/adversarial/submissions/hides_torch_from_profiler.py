# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# Turns PyTorch's record functions off around torch.add, so the CPU profiler lists no operator, then
# copies the answer into the output with a kernel of its own that also loads both inputs.
# On a CPU the interpreter's record and PyTorch's operator list are both blind here; the copy kernel,
# replayed on other values of x and y, stores the old answer again (autograder.replay). On a GPU the
# profiler lists the kernel torch.add launched, which is not this file's.
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
    torch._C._autograd._enable_record_function(False)
    try:
        answer = torch.add(x, y)
    finally:
        torch._C._autograd._enable_record_function(True)
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](answer, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
