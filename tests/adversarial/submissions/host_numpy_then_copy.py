# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# Computes the answer with NumPy on the host, then copies it into the output with a Triton kernel of
# its own, so that "its kernel" writes every byte. On a GPU the kernel accounts for a sliver of the
# call's time; on a CPU, where NumPy is invisible, the kernel never read the inputs: rejected.
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    answer = torch.from_numpy(x.cpu().numpy() + y.cpu().numpy()).to(x.device)
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](answer, out, x.numel(), BLOCK_SIZE=1024)
    return out
