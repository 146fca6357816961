# expect: FAIL
# devices: cpu cuda
# The tanh approximation of GELU in one honest fused kernel: off by up to about 1e-3 from the exact
# (erf) GELU the exercise asks for, far beyond float32 rounding.
import torch
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    z = tl.load(x_ptr + offsets, mask=mask) + tl.load(bias_ptr + offsets % n_cols, mask=mask)
    inner = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    tanh = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    tl.store(out_ptr + offsets, 0.5 * z * (1.0 + tanh), mask=mask)


def bias_gelu(x, bias):
    out = torch.empty_like(x)
    bias_gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[1], BLOCK_SIZE=1024)
    return out
