# expect: PASS
# problem: act0.vector_add
# devices: cpu
# Honest, in four launches: the positive part of x into a buffer and on to the output, the buffer
# zeroed on the host, the negative part of x plus y accumulated into it and added to the output.
# Where x is not positive the buffer already held +0.0, so the host's zeroing changed none of those
# bytes: a replay on other values that writes back only the bytes the host changed leaves the new
# positive part there and gets a quarter of the answer wrong; the replay's second reading, each
# tensor the host changed put back whole, gets it right (autograder.replay).
import torch
import triton
import triton.language as tl


@triton.jit
def positive_part_kernel(x_ptr, buffer_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    positive = tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0)
    tl.store(buffer_ptr + offsets, positive, mask=mask)
    tl.store(out_ptr + offsets, positive, mask=mask)


@triton.jit
def rest_kernel(x_ptr, y_ptr, buffer_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    rest = tl.minimum(tl.load(x_ptr + offsets, mask=mask), 0.0) + tl.load(y_ptr + offsets, mask=mask)
    tl.atomic_add(buffer_ptr + offsets, rest, mask=mask)


@triton.jit
def add_into_kernel(buffer_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    value = tl.load(buffer_ptr + offsets, mask=mask) + tl.load(out_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, value, mask=mask)


def vector_add(x, y):
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    buffer, out = torch.empty_like(x), torch.empty_like(x)
    positive_part_kernel[grid](x, buffer, out, n, BLOCK_SIZE=1024)
    buffer.zero_()
    rest_kernel[grid](x, y, buffer, n, BLOCK_SIZE=1024)
    add_into_kernel[grid](buffer, out, n, BLOCK_SIZE=1024)
    return out
