# expect: FAIL
# devices: cpu cuda
# The bias indexed by row instead of by column: right only where every bias value is equal, and it
# reads past the end of the bias whenever there are more rows than columns.
import torch
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    z = tl.load(x_ptr + offsets, mask=mask) + tl.load(bias_ptr + offsets // n_cols, mask=mask)
    tl.store(out_ptr + offsets, 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476)), mask=mask)


def bias_gelu(x, bias):
    out = torch.empty_like(x)
    bias_gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[1], BLOCK_SIZE=1024)
    return out
