# expect: TIMEOUT
# devices: cpu cuda
# timeout: 60
# alone: yes
# slow: on the CPU, a time-out of the interpreter spinning for 60 s, as sleeps_forever's; its point is the GPU's
# A grid larger than can be resident: the programs that run spin at the first barrier for programs
# that can never start. The grading ends in a time-out, and the GPU is usable afterwards.
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
        total = m * 0.0 + 1.0
        acc = tl.load(v_ptr + kv * head_dim + d, mask=dm, other=0.0, cache_modifier=".cg")
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
def grid_barrier(counter_ptr, target):
    """Wait until every program of the grid has arrived: a counter in global memory that only grows.

    debug_barrier first, so every thread of this program has issued its stores; one atomic add with
    release semantics publishes them at GPU scope; then spin with acquire loads (an atomic add of 0)
    until all programs have added theirs; debug_barrier again so no thread runs ahead of the spin.
    """
    tl.debug_barrier()
    tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
    seen = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
    while seen < target:
        seen = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
    tl.debug_barrier()


@triton.jit
def decode_step_kernel(token_ptr, embed_ptr, attn_norm_ptr, wq_ptr, wk_ptr, wv_ptr, wo_ptr, mlp_norm_ptr, wg_ptr, wu_ptr, wd_ptr,
                       final_norm_ptr, lm_head_ptr, k_cache_ptr, v_cache_ptr, cos_ptr, sin_ptr, logits_ptr, scratch_ptr, counter_ptr, base,
                       n_layers, vocab, dim, n_heads, n_kv_heads, head_dim, hidden, cached, eps, sm_scale,
                       BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr):
    """The whole step in one launch: the programs stay resident and take their share of every stage,
    with a grid barrier wherever a stage needs what all programs wrote in the previous one."""
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    q_rows = n_heads * head_dim
    kv_rows = n_kv_heads * head_dim
    # Scratch, written and read by different programs: q, k, v, the attention output, h, the MLP's a, x.
    q_buf = scratch_ptr
    k_buf = q_buf + q_rows
    v_buf = k_buf + kv_rows
    attn_buf = v_buf + kv_rows
    h_buf = attn_buf + q_rows
    a_buf = h_buf + dim
    x_buf = a_buf + hidden
    token = tl.load(token_ptr)
    barrier = 0
    for layer in range(n_layers):
        # Layer 0 reads the token's embedding row in place; later layers read what the last one wrote.
        if layer == 0:
            x_in = embed_ptr + token * dim
        else:
            x_in = x_buf
        qkv_stage(x_in, attn_norm_ptr + layer * dim, wq_ptr + layer * q_rows * dim, wk_ptr + layer * kv_rows * dim, wv_ptr + layer * kv_rows * dim,
                  q_buf, k_buf, v_buf, dim, q_rows, kv_rows, eps, pid, n_programs, BLOCK_R, BLOCK_K)
        barrier += 1
        grid_barrier(counter_ptr, base + barrier * n_programs)
        cache = layer * n_kv_heads * cached * head_dim
        attention_stage(q_buf, k_buf, v_buf, k_cache_ptr + cache, v_cache_ptr + cache, cos_ptr, sin_ptr, attn_buf, n_heads, n_heads // n_kv_heads, cached,
                        head_dim, sm_scale, pid, n_programs, BLOCK_S, BLOCK_HALF, BLOCK_D)
        barrier += 1
        grid_barrier(counter_ptr, base + barrier * n_programs)
        residual_stage(wo_ptr + layer * dim * q_rows, attn_buf, q_rows, x_in, h_buf, dim, pid, n_programs, BLOCK_R, BLOCK_K)
        barrier += 1
        grid_barrier(counter_ptr, base + barrier * n_programs)
        gate_up_stage(h_buf, mlp_norm_ptr + layer * dim, wg_ptr + layer * hidden * dim, wu_ptr + layer * hidden * dim, a_buf, dim, hidden, eps,
                      pid, n_programs, BLOCK_R, BLOCK_K)
        barrier += 1
        grid_barrier(counter_ptr, base + barrier * n_programs)
        residual_stage(wd_ptr + layer * dim * hidden, a_buf, hidden, h_buf, x_buf, dim, pid, n_programs, BLOCK_R, BLOCK_K)
        barrier += 1
        grid_barrier(counter_ptr, base + barrier * n_programs)
    scale = rms_scale(x_buf, dim, eps, BLOCK_K)
    for tile in range(pid, tl.cdiv(vocab, BLOCK_R), n_programs):
        rows, acc = matvec_tile(lm_head_ptr, tile * BLOCK_R, vocab, x_buf, final_norm_ptr, scale, dim, True, BLOCK_R, BLOCK_K)
        tl.store(logits_ptr + rows, acc, mask=rows < vocab)


BARRIERS_PER_LAYER = 5
_COUNTERS = {}


def resident_programs(device: torch.device) -> int:
    """Programs that are certain to be resident at once: one per SM on a GPU (a program of this kernel
    always fits an SM). The interpreter runs programs one after another, so there only one is."""
    if device.type != "cuda":
        return 1
    return torch.cuda.get_device_properties(device).multi_processor_count


def barrier_counter(device: torch.device, arrivals: int):
    """A counter that only grows, shared by the calls on this device, and the value it holds before this
    call's arrivals (so no kernel has to zero it: no extra launch)."""
    state = _COUNTERS.get(device)
    if state is None or state[1] + arrivals >= 2**31 - 1:
        state = [torch.zeros(1, dtype=torch.int32, device=device), 0]
        _COUNTERS[device] = state
    base = state[1]
    state[1] += arrivals
    return state[0], base


def decode_step(token, embed, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, final_norm, lm_head, k_cache, v_cache, cos, sin):
    n_layers, n_kv_heads, cached, head_dim = k_cache.shape
    vocab, dim = embed.shape
    n_heads = wq.shape[1] // head_dim
    hidden = w_gate.shape[1]
    logits = torch.empty(vocab, device=embed.device, dtype=torch.float32)
    scratch = torch.empty(2 * (n_heads + n_kv_heads) * head_dim + 2 * dim + hidden, device=embed.device, dtype=torch.float32)
    widest = max(dim, hidden, n_heads * head_dim)
    block_k = min(512, triton.next_power_of_2(widest))
    work = max(triton.cdiv(max(vocab, hidden, dim, (n_heads + 2 * n_kv_heads) * head_dim), 16), n_heads)
    # More programs than can be resident: on a CPU the interpreter runs them one at a time.
    n_programs = 2 if embed.device.type == "cpu" else 64 * torch.cuda.get_device_properties(embed.device).multi_processor_count
    counter, base = barrier_counter(embed.device, BARRIERS_PER_LAYER * n_layers * n_programs)
    decode_step_kernel[(n_programs,)](
        token, embed, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, final_norm, lm_head, k_cache, v_cache, cos, sin, logits, scratch,
        counter, base, n_layers, vocab, dim, n_heads, n_kv_heads, head_dim, hidden, cached, EPS, 1.0 / head_dim**0.5,
        BLOCK_R=16, BLOCK_K=block_k, BLOCK_S=32, BLOCK_HALF=triton.next_power_of_2(head_dim // 2), BLOCK_D=triton.next_power_of_2(head_dim),
        num_warps=8,
    )
    return logits
