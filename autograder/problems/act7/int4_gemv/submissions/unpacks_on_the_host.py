# expect: REJECT
# devices: cpu cuda
# says: did not compute the new answer
# The nibbles unpacked on the host: NumPy splits each byte of w_packed into its two 4-bit values
# (no PyTorch operator runs), and the learner's own Triton kernel does the rest, loading x, the scales,
# the zero points and the unpacked values, so every floating-point input is read by a kernel of theirs
# and every output byte stored by it. On a CPU the call's launches are replayed on new weights,
# scales and activations (the packed weights are values, not structure: the spec's replay_values),
# and the values unpacked from the old weights give the old product (autograder.replay). On a GPU
# the weights go to the host and back inside the timed call, time no kernel of theirs accounts for.
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def scaled_gemv_kernel(x_ptr, q_ptr, scale_ptr, zero_ptr, out_ptr, N, K, stride_xb, stride_sn, stride_zn, stride_ob, BLOCK_N: tl.constexpr, GROUP: tl.constexpr):
    b = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, GROUP):
        ks = k0 + tl.arange(0, GROUP)
        x = tl.load(x_ptr + b * stride_xb + ks).to(tl.float32)
        q = tl.load(q_ptr + rows[:, None] * K + ks[None, :], mask=rows[:, None] < N, other=0).to(tl.float32)
        s = tl.load(scale_ptr + rows * stride_sn + k0 // GROUP, mask=rows < N, other=0.0).to(tl.float32)
        z = tl.load(zero_ptr + rows * stride_zn + k0 // GROUP, mask=rows < N, other=0).to(tl.float32)
        acc += tl.sum((q - z[:, None]) * s[:, None] * x[None, :], axis=1)
    tl.store(out_ptr + b * stride_ob + rows, acc.to(tl.bfloat16), mask=rows < N)


def int4_gemv(x, w_packed, scale, zero):
    batch, k = x.shape
    n = w_packed.shape[0]
    packed = w_packed.cpu().numpy()
    unpacked = np.empty((n, k), dtype=np.uint8)
    unpacked[:, 0::2], unpacked[:, 1::2] = packed & 0xF, packed >> 4
    q = torch.from_numpy(unpacked).to(x.device)
    out = torch.empty((batch, n), dtype=torch.bfloat16, device=x.device)
    scaled_gemv_kernel[(batch, triton.cdiv(n, 16))](x, q, scale, zero, out, n, k, x.stride(0), scale.stride(0), zero.stride(0), out.stride(0), BLOCK_N=16, GROUP=128)
    return out
