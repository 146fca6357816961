"""Act 2's answers: the cost models, the roofline and the inference arithmetic that the exact
exercises grade and the measured ones use to judge, with the draws their cases share."""

from __future__ import annotations

import random

DTYPE_BYTES = (1, 2, 4, 8)
SOFTMAX_FLOPS_PER_ELEMENT = 5  # max, subtract, exp, sum, divide: one each per element


def rng(seed: int) -> random.Random:
    return random.Random(seed)


# --- FLOPs and bytes ------------------------------------------------------------------------------


def elementwise_cost(n: int, dtype_bytes: int, n_inputs: int, flops_per_element: int) -> dict:
    """Reads each of n_inputs tensors of n elements once, writes one of n elements."""
    return {"flops": flops_per_element * n, "bytes": (n_inputs + 1) * n * dtype_bytes}


def softmax_cost(rows: int, cols: int, dtype_bytes: int) -> dict:
    """Row softmax in one pass over memory: read the matrix once, write it once."""
    return {"flops": SOFTMAX_FLOPS_PER_ELEMENT * rows * cols, "bytes": 2 * rows * cols * dtype_bytes}


def matmul_cost(m: int, n: int, k: int, dtype_bytes: int) -> dict:
    """C[m, n] = A[m, k] @ B[k, n]: a multiply and an add per (i, j, l); A and B read once, C written once."""
    return {"flops": 2 * m * n * k, "bytes": (m * k + k * n + m * n) * dtype_bytes}


def _score_pairs(seq_len: int, causal: bool) -> int:
    """Query-key pairs that are computed: all of them, or those with key <= query when causal."""
    return seq_len * (seq_len + 1) // 2 if causal else seq_len * seq_len


def _attention_flops(batch: int, heads: int, seq_len: int, head_dim: int, causal: bool) -> int:
    pairs = batch * heads * _score_pairs(seq_len, causal)
    # QK^T and PV: 2 * head_dim FLOPs per pair each; softmax: 5 per score.
    return 4 * head_dim * pairs + SOFTMAX_FLOPS_PER_ELEMENT * pairs


def naive_attention_cost(batch: int, heads: int, seq_len: int, head_dim: int, dtype_bytes: int, causal: bool) -> dict:
    """Q, K, V read and O written once; the full seq_len x seq_len score matrix S is written, read by
    the softmax, the probabilities P written, and read again by P @ V (a causal kernel still stores
    the whole square matrix)."""
    qkvo = 4 * batch * heads * seq_len * head_dim
    scores = batch * heads * seq_len * seq_len
    return {"flops": _attention_flops(batch, heads, seq_len, head_dim, causal), "bytes": (qkvo + 4 * scores) * dtype_bytes}


def flash_attention_cost(batch: int, heads: int, seq_len: int, head_dim: int, dtype_bytes: int, causal: bool) -> dict:
    """Same FLOPs; the scores live only in on-chip memory, so the minimum traffic is Q, K, V read
    once and O written once."""
    return {"flops": _attention_flops(batch, heads, seq_len, head_dim, causal), "bytes": 4 * batch * heads * seq_len * head_dim * dtype_bytes}


def attention_cases(seed: int) -> list:
    r = rng(seed)
    cases = [
        dict(batch=1, heads=1, seq_len=1, head_dim=64, dtype_bytes=2, causal=True),
        dict(batch=1, heads=1, seq_len=1, head_dim=64, dtype_bytes=2, causal=False),
        dict(batch=4, heads=16, seq_len=4096, head_dim=128, dtype_bytes=2, causal=True),
        dict(batch=2, heads=8, seq_len=1025, head_dim=64, dtype_bytes=4, causal=False),
    ]
    for _ in range(6):
        cases.append(
            dict(
                batch=r.randrange(1, 65),
                heads=r.randrange(1, 129),
                seq_len=r.randrange(1, 1 << 17),
                head_dim=r.choice((32, 64, 80, 96, 128, 256)),
                dtype_bytes=r.choice((1, 2, 4)),
                causal=r.random() < 0.5,
            )
        )
    return cases


# --- The roofline model ---------------------------------------------------------------------------


def attainable_flops(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """The roofline: the lower of the compute roof and what the memory can feed at this intensity."""
    return min(peak_flops, intensity * bandwidth)


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """The intensity (FLOP per byte) where the memory diagonal meets the compute roof."""
    return peak_flops / bandwidth


def roofline_point(flops: float, bytes_moved: float, seconds: float, peak_flops: float, bandwidth: float) -> dict:
    """Where one measured operation sits on the roofline, and how close to its roof it got."""
    intensity = flops / bytes_moved
    achieved = flops / seconds
    roof = attainable_flops(intensity, peak_flops, bandwidth)
    return {"intensity": intensity, "achieved_flops": achieved, "attainable_flops": roof, "fraction_of_roof": achieved / roof}


OVERHEAD_GROWTH = 1.5


def classify_regime(flops: float, bytes_moved: float, seconds: float, seconds_doubled: float, peak_flops: float, bandwidth: float) -> str:
    """'overhead' when doubling the work grew the time by less than half (fixed costs dominate);
    otherwise 'compute' at or above the ridge point, 'memory' below it."""
    if seconds_doubled < OVERHEAD_GROWTH * seconds:
        return "overhead"
    return "compute" if flops / bytes_moved >= ridge_point(peak_flops, bandwidth) else "memory"


def hardware(r: random.Random) -> dict:
    return dict(peak_flops=r.uniform(5e12, 2e15), bandwidth=r.uniform(2e11, 8e12))


# --- Transformer inference arithmetic -------------------------------------------------------------


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, seq_len: int, batch: int, dtype_bytes: int) -> int:
    """A key and a value vector per layer, KV head and token, for every sequence in the batch."""
    return 2 * layers * kv_heads * head_dim * seq_len * batch * dtype_bytes


def max_batch(memory_bytes: int, weight_bytes: int, layers: int, kv_heads: int, head_dim: int, seq_len: int, dtype_bytes: int) -> int:
    """The most sequences of seq_len tokens whose KV caches fit beside the weights (0 if none)."""
    per_sequence = kv_cache_bytes(layers, kv_heads, head_dim, seq_len, 1, dtype_bytes)
    return max(0, (memory_bytes - weight_bytes) // per_sequence)


def decode_tokens_per_s_bound(weight_bytes: float, kv_bytes_per_sequence: float, batch: int, bandwidth: float) -> float:
    """Each decode step reads every weight once and every sequence's KV cache once, and yields one
    token per sequence: the memory bound on tokens per second."""
    return batch * bandwidth / (weight_bytes + batch * kv_bytes_per_sequence)


def model(r: random.Random) -> dict:
    heads = r.choice((8, 16, 32, 40, 64))
    return dict(layers=r.randrange(1, 129), kv_heads=r.choice([h for h in (1, 2, 4, 8, heads) if h <= heads]), head_dim=r.choice((64, 80, 96, 128, 256)))
