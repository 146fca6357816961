# expect: FAIL ERROR
# devices: cpu cuda
# entry: flash_attention
# Only whole tiles of keys are visited: the last S % BLOCK_N keys are dropped.
import math
import os

import torch
import triton
import triton.language as tl


def attention_configs():
    """Tile shapes the autotuner tries on a GPU; under the Triton interpreter, one small one."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 16}, num_warps=4, num_stages=1)]
    return [
        # 128 query rows per program: each K and V tile loaded from L2 or HBM serves 128 rows.
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    ]


def prune_short_sequences(configs, named_args, **kwargs):
    """Short sequences are launch-bound: take the first configuration without timing them all."""
    if named_args["S"] < 1024:
        return configs[:1]
    return configs


@triton.jit
def attention_block_loop(
    acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, S, qk_scale, lo, hi,
    BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, SEQ_MASK: tl.constexpr,
):
    """Stream the K and V tiles of columns lo..hi past the query tile: the online softmax."""
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if SEQ_MASK:
            k = tl.load(k_ptrs, mask=cols[:, None] < S, other=0.0)
        else:
            k = tl.load(k_ptrs)
        # Scores of this tile, (BLOCK_M, BLOCK_N) in float32 registers: never written to memory.
        qk = tl.dot(q, tl.trans(k))
        if CAUSAL_MASK:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk, -float("inf"))
        if SEQ_MASK:
            qk = tl.where(cols[None, :] < S, qk, -float("inf"))
        # Work in base 2: qk_scale = softmax scale * log2(e), so exp2 gives the same exp as exp().
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        # Everything accumulated so far was scaled by exp(old max); rescale it to the new max.
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if SEQ_MASK:
            v = tl.load(v_ptrs, mask=cols[:, None] < S, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.autotune(configs=attention_configs(), key=["S", "HEAD_DIM", "CAUSAL"], prune_configs_by={"early_config_prune": prune_short_sequences})
@triton.jit
def flash_attention_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr, qk_scale, H, S,
    stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
    stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
    HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """Program (m, bh) writes rows m*BLOCK_M.. of the output of head bh: softmax(Q K^T * scale) V."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    start_m = tl.program_id(0)
    if CAUSAL:
        # The last query tiles have the most work under a causal mask: start them first, so the
        # short ones fill the gaps at the end instead of leaving a long one running alone.
        start_m = tl.num_programs(0) - 1 - start_m
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    q_base = q_ptr + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = k_ptr + b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    v_base = v_ptr + b.to(tl.int64) * stride_vb + h.to(tl.int64) * stride_vh
    o_base = out_ptr + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    # The query tile is loaded once and stays in registers for the whole sweep over K and V.
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    k_ptrs = k_base + offs_n[:, None] * stride_ks + offs_d[None, :]
    v_ptrs = v_base + offs_n[:, None] * stride_vs + offs_d[None, :]

    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    if CAUSAL:
        # Tiles left of the diagonal are entirely visible: no mask at all.
        acc, l_i, m_i = attention_block_loop(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_ks, stride_vs, offs_m, offs_n, S, qk_scale,
            0, start_m * BLOCK_M, BLOCK_N, False, False,
        )
        # The diagonal tile: the causal mask, and the end of the sequence.
        acc, l_i, m_i = attention_block_loop(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_ks, stride_vs, offs_m, offs_n, S, qk_scale,
            start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, (S // BLOCK_N) * BLOCK_N), BLOCK_N, True, True,
        )
    else:
        # Every full tile without masks, then the last partial one (if S is not a multiple of BLOCK_N).
        full = (S // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = attention_block_loop(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_ks, stride_vs, offs_m, offs_n, S, qk_scale,
            0, full, BLOCK_N, False, False,
        )
        acc, l_i, m_i = attention_block_loop(
            acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_ks, stride_vs, offs_m, offs_n, S, qk_scale,
            full, full, BLOCK_N, False, True,
        )
    acc = acc / l_i[:, None]
    o_ptrs = o_base + offs_m[:, None] * stride_os + offs_d[None, :]
    tl.store(o_ptrs, acc.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < S)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Return softmax(q @ k^T / sqrt(D) [+ causal mask]) @ v, computed by flash_attention_kernel.

    q, k, v: (B, H, S, D) bfloat16 tensors with D in {64, 128} and the last dimension contiguous.
    causal: when True, query i attends only to keys j <= i.
    Returns a new contiguous (B, H, S, D) bfloat16 tensor. Never builds the S x S scores in memory.
    FLOPs 4*B*H*S*S*D (half of that when causal); traffic at least 4*B*H*S*D*2 bytes.
    """
    B, H, S, D = q.shape
    out = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    # Fold log2(e) into the scale once, so the kernel's exponentials are exp2.
    qk_scale = (1.0 / math.sqrt(D)) * 1.4426950408889634

    def grid(meta):
        return (triton.cdiv(S, meta["BLOCK_M"]), B * H)

    flash_attention_kernel[grid](
        q, k, v, out, qk_scale, H, S,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2),
        HEAD_DIM=D, CAUSAL=bool(causal),
    )
    return out
