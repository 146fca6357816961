# expect: FAIL
# devices: cpu cuda
# Attention over the cached positions only: the new token does not attend to itself.
import torch
import triton
import triton.language as tl

EPS = 1e-5


@triton.jit
def rms_scale(x_ptr, dim, eps, BLOCK_K: tl.constexpr):
    """1 / sqrt(mean(x^2) + eps) of a vector other programs wrote (.cg: read from L2, never a stale L1 line)."""
    total = tl.zeros([BLOCK_K], tl.float32)
    for k0 in range(0, dim, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        v = tl.load(x_ptr + cols, mask=cols < dim, other=0.0, cache_modifier=".cg")
        total += v * v
    return tl.rsqrt(tl.sum(total, axis=0) / dim + eps)


@triton.jit
def matvec_tile(w_ptr, row0, n_rows, x_ptr, norm_ptr, scale, n_cols, HAS_NORM: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """Rows row0 .. row0 + BLOCK_R of W @ v, where v = x * scale * norm (HAS_NORM) or x.
    Reads BLOCK_R * n_cols weights once (streamed: evict_first keeps L2 for the activations)."""
    rows = row0 + tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R], tl.float32)
    for k0 in range(0, n_cols, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        v = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0, cache_modifier=".cg")
        if HAS_NORM:
            v = v * scale * tl.load(norm_ptr + cols, mask=cols < n_cols, other=0.0)
        w = tl.load(w_ptr + rows[:, None] * n_cols + cols[None, :], mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols), other=0.0,
                    eviction_policy="evict_first")
        acc += tl.sum(w * v[None, :], axis=1)
    return rows, acc


@triton.jit
def qkv_stage(x_ptr, norm_ptr, wq_ptr, wk_ptr, wv_ptr, q_ptr, k_ptr, v_ptr, dim, q_rows, kv_rows, eps, pid, n_programs,
              BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """q, k, v = Wq h, Wk h, Wv h with h = RMSNorm(x): row tiles of the three matrices dealt round the programs."""
    scale = rms_scale(x_ptr, dim, eps, BLOCK_K)
    q_tiles = tl.cdiv(q_rows, BLOCK_R)
    kv_tiles = tl.cdiv(kv_rows, BLOCK_R)
    for tile in range(pid, q_tiles + 2 * kv_tiles, n_programs):
        if tile < q_tiles:
            w, out, row0, n_rows = wq_ptr, q_ptr, tile * BLOCK_R, q_rows
        elif tile < q_tiles + kv_tiles:
            w, out, row0, n_rows = wk_ptr, k_ptr, (tile - q_tiles) * BLOCK_R, kv_rows
        else:
            w, out, row0, n_rows = wv_ptr, v_ptr, (tile - q_tiles - kv_tiles) * BLOCK_R, kv_rows
        rows, acc = matvec_tile(w, row0, n_rows, x_ptr, norm_ptr, scale, dim, True, BLOCK_R, BLOCK_K)
        tl.store(out + rows, acc, mask=rows < n_rows)


@triton.jit
def attention_stage(q_ptr, k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, cos_ptr, sin_ptr, out_ptr, n_heads, group, cached, head_dim, sm_scale, pid, n_programs,
                    BLOCK_S: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr):
    """One query head per work unit: RoPE on q and on the new key, then an online softmax over the
    cached positions (BLOCK_S at a time) and the new token. Reads its KV head's cache once."""
    half = head_dim // 2
    i = tl.arange(0, BLOCK_HALF)
    d = tl.arange(0, BLOCK_D)
    hm = i < half
    dm = d < head_dim
    cos = tl.load(cos_ptr + i, mask=hm, other=0.0)
    sin = tl.load(sin_ptr + i, mask=hm, other=0.0)
    for head in range(pid, n_heads, n_programs):
        kv = head // group
        q1 = tl.load(q_ptr + head * head_dim + i, mask=hm, other=0.0, cache_modifier=".cg")
        q2 = tl.load(q_ptr + head * head_dim + half + i, mask=hm, other=0.0, cache_modifier=".cg")
        # Rotated, and scaled once here rather than every score.
        r1 = (q1 * cos - q2 * sin) * sm_scale
        r2 = (q1 * sin + q2 * cos) * sm_scale
        k1 = tl.load(k_ptr + kv * head_dim + i, mask=hm, other=0.0, cache_modifier=".cg")
        k2 = tl.load(k_ptr + kv * head_dim + half + i, mask=hm, other=0.0, cache_modifier=".cg")
        m = tl.sum(r1 * (k1 * cos - k2 * sin), axis=0) + tl.sum(r2 * (k1 * sin + k2 * cos), axis=0)
        m = tl.full([], float("-inf"), tl.float32)
        total = tl.full([], 0.0, tl.float32)
        acc = tl.zeros([BLOCK_D], tl.float32)
        base = kv * cached * head_dim
        for s0 in range(0, cached, BLOCK_S):
            pos = s0 + tl.arange(0, BLOCK_S)
            pm = pos < cached
            rows = k_cache_ptr + base + pos[:, None] * head_dim
            c1 = tl.load(rows + i[None, :], mask=pm[:, None] & hm[None, :], other=0.0)
            c2 = tl.load(rows + half + i[None, :], mask=pm[:, None] & hm[None, :], other=0.0)
            scores = tl.sum(c1 * r1[None, :], axis=1) + tl.sum(c2 * r2[None, :], axis=1)
            scores = tl.where(pm, scores, float("-inf"))
            m_new = tl.maximum(m, tl.max(scores, axis=0))
            alpha = tl.exp(m - m_new)
            p = tl.exp(scores - m_new)
            vals = tl.load(v_cache_ptr + base + pos[:, None] * head_dim + d[None, :], mask=pm[:, None] & dm[None, :], other=0.0)
            acc = acc * alpha + tl.sum(p[:, None] * vals, axis=0)
            total = total * alpha + tl.sum(p, axis=0)
            m = m_new
        tl.store(out_ptr + head * head_dim + d, acc / total, mask=dm)


@triton.jit
def residual_stage(w_ptr, in_ptr, n_in, res_ptr, out_ptr, dim, pid, n_programs, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """out = res + W @ in: the output projection and the MLP's down projection, each with its residual."""
    for tile in range(pid, tl.cdiv(dim, BLOCK_R), n_programs):
        rows, acc = matvec_tile(w_ptr, tile * BLOCK_R, dim, in_ptr, in_ptr, 1.0, n_in, False, BLOCK_R, BLOCK_K)
        res = tl.load(res_ptr + rows, mask=rows < dim, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + rows, res + acc, mask=rows < dim)


@triton.jit
def gate_up_stage(h_ptr, norm_ptr, wg_ptr, wu_ptr, a_ptr, dim, hidden, eps, pid, n_programs, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """a = silu(Wg m) * (Wu m) with m = RMSNorm(h): the gate and up rows of one tile together."""
    scale = rms_scale(h_ptr, dim, eps, BLOCK_K)
    for tile in range(pid, tl.cdiv(hidden, BLOCK_R), n_programs):
        rows, gate = matvec_tile(wg_ptr, tile * BLOCK_R, hidden, h_ptr, norm_ptr, scale, dim, True, BLOCK_R, BLOCK_K)
        rows, up = matvec_tile(wu_ptr, tile * BLOCK_R, hidden, h_ptr, norm_ptr, scale, dim, True, BLOCK_R, BLOCK_K)
        tl.store(a_ptr + rows, gate / (1.0 + tl.exp(-gate)) * up, mask=rows < hidden)


@triton.jit
def qkv_kernel(x_ptr, norm_ptr, wq_ptr, wk_ptr, wv_ptr, q_ptr, k_ptr, v_ptr, dim, q_rows, kv_rows, eps, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    qkv_stage(x_ptr, norm_ptr, wq_ptr, wk_ptr, wv_ptr, q_ptr, k_ptr, v_ptr, dim, q_rows, kv_rows, eps, tl.program_id(0), tl.num_programs(0), BLOCK_R, BLOCK_K)


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, cos_ptr, sin_ptr, out_ptr, n_heads, group, cached, head_dim, sm_scale,
                     BLOCK_S: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr):
    attention_stage(q_ptr, k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, cos_ptr, sin_ptr, out_ptr, n_heads, group, cached, head_dim, sm_scale,
                    tl.program_id(0), tl.num_programs(0), BLOCK_S, BLOCK_HALF, BLOCK_D)


@triton.jit
def residual_matvec_kernel(w_ptr, in_ptr, n_in, res_ptr, out_ptr, dim, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    residual_stage(w_ptr, in_ptr, n_in, res_ptr, out_ptr, dim, tl.program_id(0), tl.num_programs(0), BLOCK_R, BLOCK_K)


@triton.jit
def gate_up_kernel(h_ptr, norm_ptr, wg_ptr, wu_ptr, a_ptr, dim, hidden, eps, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    gate_up_stage(h_ptr, norm_ptr, wg_ptr, wu_ptr, a_ptr, dim, hidden, eps, tl.program_id(0), tl.num_programs(0), BLOCK_R, BLOCK_K)


def decode_layer(x, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, k_cache, v_cache, cos, sin):
    n_kv_heads, cached, head_dim = k_cache.shape
    dim = x.shape[0]
    q_rows, kv_rows, hidden = wq.shape[0], wk.shape[0], w_gate.shape[0]
    n_heads = q_rows // head_dim
    # One scratch buffer for everything the stages hand each other: q, k, v, attention output, h, a.
    scratch = torch.empty(2 * q_rows + 2 * kv_rows + dim + hidden, device=x.device, dtype=torch.float32)
    ends = [q_rows, q_rows + kv_rows, q_rows + 2 * kv_rows, 2 * q_rows + 2 * kv_rows, 2 * q_rows + 2 * kv_rows + dim, scratch.numel()]
    q, k, v, attn, h, a = (scratch[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True))
    out = torch.empty_like(x)
    block_r = 16
    block_k = min(512, triton.next_power_of_2(max(dim, hidden, q_rows)))
    tiles = triton.cdiv(q_rows, block_r) + 2 * triton.cdiv(kv_rows, block_r)
    # Five launches: each boundary is where every program needs all of what the last stage wrote.
    qkv_kernel[(tiles,)](x, attn_norm, wq, wk, wv, q, k, v, dim, q_rows, kv_rows, EPS, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=8)
    attention_kernel[(n_heads,)](q, k, v, k_cache, v_cache, cos, sin, attn, n_heads, n_heads // n_kv_heads, cached, head_dim, 1.0 / head_dim**0.5,
                                 BLOCK_S=32, BLOCK_HALF=triton.next_power_of_2(head_dim // 2), BLOCK_D=triton.next_power_of_2(head_dim))
    residual_matvec_kernel[(triton.cdiv(dim, block_r),)](wo, attn, q_rows, x, h, dim, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=8)
    gate_up_kernel[(triton.cdiv(hidden, block_r),)](h, mlp_norm, w_gate, w_up, a, dim, hidden, EPS, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=8)
    residual_matvec_kernel[(triton.cdiv(dim, block_r),)](w_down, a, hidden, h, out, dim, BLOCK_R=block_r, BLOCK_K=block_k, num_warps=8)
    return out
