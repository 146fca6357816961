# expect: REJECT
# devices: cpu cuda
# The learner's own Triton kernel only dequantizes W to bf16; torch.matmul (cuBLAS) does the product.
import torch
import triton
import triton.language as tl


@triton.jit
def dequantize_kernel(w_ptr, scale_ptr, zero_ptr, out_ptr, K, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, BLOCK)
    for start in range(0, K // 2, BLOCK):
        byte = start + j
        mask = byte < K // 2
        packed = tl.load(w_ptr + row * (K // 2) + byte, mask=mask, other=0)
        group = (2 * byte) // 128
        s = tl.load(scale_ptr + row * (K // 128) + group, mask=mask, other=0.0).to(tl.float32)
        z = tl.load(zero_ptr + row * (K // 128) + group, mask=mask, other=0).to(tl.float32)
        tl.store(out_ptr + row * K + 2 * byte, (((packed & 0xF).to(tl.float32) - z) * s).to(tl.bfloat16), mask=mask)
        tl.store(out_ptr + row * K + 2 * byte + 1, (((packed >> 4).to(tl.float32) - z) * s).to(tl.bfloat16), mask=mask)


def int4_gemv(x, w_packed, scale, zero):
    n, k = w_packed.shape[0], 2 * w_packed.shape[1]
    w = torch.empty((n, k), dtype=torch.bfloat16, device=x.device)
    dequantize_kernel[(n,)](w_packed, scale, zero, w, k, BLOCK=256)
    return torch.matmul(x, w.t())
