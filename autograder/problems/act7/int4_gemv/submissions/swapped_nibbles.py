# expect: FAIL
# devices: cpu cuda
# An honest, fast kernel that reads the nibbles in the other order (element 2j from the high 4 bits): wrong almost everywhere.
import torch
import triton
import triton.language as tl


@triton.jit
def int4_gemv_kernel(
    x_ptr, w_ptr, scale_ptr, zero_ptr, out_ptr,
    B, N, K,
    stride_xb, stride_wn, stride_sn, stride_zn, stride_ob,
    GROUP: tl.constexpr, BLOCK_N: tl.constexpr, GROUPS_PER_STEP: tl.constexpr,
):
    """Program (b, pid_n) computes out[b, rows] for BLOCK_N rows of W: it streams their packed bytes
    once, GROUPS_PER_STEP groups at a time, unpacks and dequantises them in registers, and
    accumulates in float32."""
    # Axis 0 is the batch row: the programs of one block of W's rows for every batch row are launched
    # next to each other, so at batch > 1 the second and later reads of those bytes come from L2.
    b = tl.program_id(0)
    pid_n = tl.program_id(1)
    HALF: tl.constexpr = GROUP // 2  # bytes per group of a row
    # Rows past the end wrap around (% N): they load valid memory and are never stored.
    rows = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    steps = tl.arange(0, GROUPS_PER_STEP)
    j = tl.arange(0, HALF)
    num_groups = K // GROUP

    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for g0 in range(0, num_groups, GROUPS_PER_STEP):
        groups = g0 + steps
        in_k = groups < num_groups
        # The packed bytes, BLOCK_N x GROUPS_PER_STEP x 64: contiguous along each row, so every
        # thread loads 16 bytes (32 weights) at once.
        w_ptrs = w_ptr + rows[:, None, None] * stride_wn + (groups * HALF)[None, :, None] + j[None, None, :]
        packed = tl.load(w_ptrs, mask=in_k[None, :, None], other=0)
        low = (packed >> 4).to(tl.float32)
        high = (packed & 0xF).to(tl.float32)
        # x's even and odd elements of these groups (tiny, and shared by all programs: cached).
        k_even = groups[:, None] * GROUP + 2 * j[None, :]
        x_even = tl.load(x_ptr + b * stride_xb + k_even, mask=in_k[:, None], other=0.0).to(tl.float32)
        x_odd = tl.load(x_ptr + b * stride_xb + k_even + 1, mask=in_k[:, None], other=0.0).to(tl.float32)
        # sum_k x_k (q_k - z) s = s * (sum_k x_k q_k - z * sum_k x_k): the scale and the zero are
        # applied once per group and row, not once per weight.
        dots = tl.sum(low * x_even[None, :, :] + high * x_odd[None, :, :], axis=2)
        x_sums = tl.sum(x_even + x_odd, axis=1)
        s = tl.load(scale_ptr + rows[:, None] * stride_sn + groups[None, :], mask=in_k[None, :], other=0.0).to(tl.float32)
        z = tl.load(zero_ptr + rows[:, None] * stride_zn + groups[None, :], mask=in_k[None, :], other=0).to(tl.float32)
        acc += tl.sum(s * (dots - z * x_sums[None, :]), axis=1)

    out_rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + b * stride_ob + out_rows, acc.to(tl.bfloat16), mask=out_rows < N)



def int4_gemv(x, w_packed, scale, zero):
    B, K = x.shape
    N = w_packed.shape[0]
    out = torch.empty((B, N), dtype=torch.bfloat16, device=x.device)
    int4_gemv_kernel[(B, triton.cdiv(N, 4))](
        x, w_packed, scale, zero, out, B, N, K,
        x.stride(0), w_packed.stride(0), scale.stride(0), zero.stride(0), out.stride(0),
        GROUP=128, BLOCK_N=4, GROUPS_PER_STEP=2,
    )
    return out
