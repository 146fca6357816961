# expect: REJECT
# devices: cpu cuda
# says: asks you to write
# A kernel of the learner's, one row a program, whose arithmetic is triton.language's own softmax:
# the row's maximum, exponentials and sum, which the exercise asks for, all in one call that Triton
# inlines. Refused by its code (Problem.refused_language), whatever name it is called by.
import torch
import triton
import triton.language as tl

normalize = tl.softmax


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * stride_out + cols, normalize(x, 0), mask=mask)


def softmax(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
