# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: did not compute the new answer
# host_numpy_then_copy, with a copy kernel that also loads the inputs (and adds nothing of them), so
# that "your kernels read every input" holds: NumPy did the arithmetic, the kernel only copied it.
# On a CPU the interpreter sees a kernel that read both inputs and stored the output, and NumPy is
# invisible to the profiler; the launch replayed on other values of x and y stores the old answer
# again (autograder.replay). On a GPU the copies to and from the host are GPU time the copy kernel
# does not account for.
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    touched = tl.load(x_ptr + offsets, mask=mask, other=0.0) * 0.0 + tl.load(y_ptr + offsets, mask=mask, other=0.0) * 0.0
    value = tl.load(src_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(touched == touched, value, value), mask=mask)


def vector_add(x, y):
    answer = torch.from_numpy(x.cpu().numpy() + y.cpu().numpy()).to(x.device)
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](answer, x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
