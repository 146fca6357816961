# expect: REJECT
# devices: cpu cuda
# The learner's own Triton kernel only dequantizes W (to float32, so every value is right and the
# verdict is decided by who did the product); torch.matmul (cuBLAS) does the product. With W in bf16
# the values were sometimes outside the tolerance (a FAIL, seen once in make test) before the check of
# whose kernels ran.
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
        tl.store(out_ptr + row * K + 2 * byte, ((packed & 0xF).to(tl.float32) - z) * s, mask=mask)
        tl.store(out_ptr + row * K + 2 * byte + 1, ((packed >> 4).to(tl.float32) - z) * s, mask=mask)


def int4_gemv(x, w_packed, scale, zero):
    n, k = w_packed.shape[0], 2 * w_packed.shape[1]
    w = torch.empty((n, k), dtype=torch.float32, device=x.device)
    dequantize_kernel[(n,)](w_packed, scale, zero, w, k, BLOCK=256)
    return torch.matmul(x.float(), w.t()).to(torch.bfloat16)
