# expect: PASS
# devices: cpu cuda
# speed_at_most: 1.0
# The weights unquantized before the product: one of the learner's own Triton kernels writes W out in
# float32 (every value exact), another of theirs reads it back for the GEMV. Every kernel is theirs
# and every value right, so the verdict is PASS; what the speed measures is what they move: W written
# and read again at 4 bytes a weight instead of read once at half a byte, slower than cuBLAS reading
# 2 bytes a weight, so no speed point (its ratio to the library stays at most 1.0 on a GPU).
import torch
import triton
import triton.language as tl


@triton.jit
def dequantize_kernel(w_ptr, scale_ptr, zero_ptr, out_ptr, K, stride_wn, stride_sn, stride_zn, BLOCK_K: tl.constexpr, GROUP: tl.constexpr):
    row = tl.program_id(0)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = ks < K
    byte = tl.load(w_ptr + row * stride_wn + ks // 2, mask=mask, other=0)
    q = tl.where(ks % 2 == 0, byte & 0xF, byte >> 4).to(tl.float32)
    s = tl.load(scale_ptr + row * stride_sn + ks // GROUP, mask=mask, other=0.0).to(tl.float32)
    z = tl.load(zero_ptr + row * stride_zn + ks // GROUP, mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + row * K + ks, (q - z) * s, mask=mask)


@triton.jit
def gemv_kernel(x_ptr, w_ptr, out_ptr, N, K, stride_xb, stride_ob, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    b = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + b * stride_xb + ks, mask=ks < K, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(out_ptr + b * stride_ob + rows, acc.to(tl.bfloat16), mask=rows < N)


def int4_gemv(x, w_packed, scale, zero):
    batch, k = x.shape
    n = w_packed.shape[0]
    w = torch.empty((n, k), dtype=torch.float32, device=x.device)
    dequantize_kernel[(n, triton.cdiv(k, 256))](w_packed, scale, zero, w, k, w_packed.stride(0), scale.stride(0), zero.stride(0), BLOCK_K=256, GROUP=128)
    out = torch.empty((batch, n), dtype=torch.bfloat16, device=x.device)
    gemv_kernel[(batch, triton.cdiv(n, 16))](x, w, out, n, k, x.stride(0), out.stride(0), BLOCK_N=16, BLOCK_K=128)
    return out
