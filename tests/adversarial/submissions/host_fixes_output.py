# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: not what your kernel stored
# The kernel reads both inputs but stores only x; the host then adds y into the output in place
# through NumPy, which the CPU profiler cannot see. The interpreter kept what the kernel stored, byte
# by byte, and the output returned is not that.
import torch
import triton
import triton.language as tl


@triton.jit
def half_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(y == y, x, x), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    half_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    out.numpy()[:] += y.numpy()
    return out
