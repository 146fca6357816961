# expect: PASS
# problem: act0.vector_add
# devices: cuda
# Launches on a side stream without telling the caller: the device-wide synchronisation before the
# end event keeps the work inside the timer, so the time is honest (and the answer right).
import torch
import triton
import triton.language as tl

_side = None


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    global _side
    _side = _side or torch.cuda.Stream()
    out = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
