"""Act 2: performance models. Pure-Python exercises with exact answers: the FLOPs and minimum bytes
of common operations, the roofline model, regime classification and transformer inference
arithmetic. Every case is drawn fresh from the seed, after a few fixed edge cases."""

from __future__ import annotations

import random

from .. import exact
from ..measured import TIME_AGREEMENT, MeasuredOp, MeasuredProblem, agree, ms
from ..problem import ExactProblem, register

DTYPE_BYTES = (1, 2, 4, 8)
SOFTMAX_FLOPS_PER_ELEMENT = 5  # max, subtract, exp, sum, divide: one each per element


def _rng(seed: int) -> random.Random:
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


def _elementwise_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [dict(n=1, dtype_bytes=4, n_inputs=2, flops_per_element=1), dict(n=1023, dtype_bytes=2, n_inputs=1, flops_per_element=8)]
    cases += [dict(n=r.randrange(1, 1 << 30), dtype_bytes=r.choice(DTYPE_BYTES), n_inputs=r.randrange(1, 5), flops_per_element=r.randrange(1, 20)) for _ in range(6)]
    return cases


def _softmax_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [dict(rows=1, cols=1, dtype_bytes=4), dict(rows=4096, cols=1823, dtype_bytes=2)]
    return cases + [dict(rows=r.randrange(1, 1 << 16), cols=r.randrange(1, 1 << 16), dtype_bytes=r.choice(DTYPE_BYTES)) for _ in range(6)]


def _matmul_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [dict(m=1, n=1, k=1, dtype_bytes=4), dict(m=1823, n=781, k=129, dtype_bytes=2), dict(m=1, n=4096, k=4096, dtype_bytes=2)]
    return cases + [dict(m=r.randrange(1, 1 << 15), n=r.randrange(1, 1 << 15), k=r.randrange(1, 1 << 15), dtype_bytes=r.choice(DTYPE_BYTES)) for _ in range(6)]


def _attention_cases(seed: int) -> list:
    r = _rng(seed)
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


def _hardware(r: random.Random) -> dict:
    return dict(peak_flops=r.uniform(5e12, 2e15), bandwidth=r.uniform(2e11, 8e12))


def _attainable_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [dict(intensity=1 / 12, peak_flops=50.5e12, bandwidth=4.141e12), dict(intensity=1e4, peak_flops=797.4e12, bandwidth=4.141e12)]
    cases.append(dict(intensity=797.4e12 / 4.141e12, peak_flops=797.4e12, bandwidth=4.141e12))
    return cases + [dict(intensity=10 ** r.uniform(-2, 4), **_hardware(r)) for _ in range(8)]


def _ridge_cases(seed: int) -> list:
    r = _rng(seed)
    return [dict(peak_flops=50.5e12, bandwidth=4.141e12)] + [_hardware(r) for _ in range(6)]


def _roofline_point_cases(seed: int) -> list:
    r = _rng(seed)
    cases = []
    for _ in range(8):
        flops = 10 ** r.uniform(3, 13)
        bytes_moved = 10 ** r.uniform(3, 11)
        cases.append(dict(flops=flops, bytes_moved=bytes_moved, seconds=10 ** r.uniform(-6, -1), **_hardware(r)))
    return cases


def _regime_cases(seed: int) -> list:
    r = _rng(seed)
    h = dict(peak_flops=800e12, bandwidth=4e12)
    cases = [
        dict(flops=1e3, bytes_moved=12e3, seconds=8e-6, seconds_doubled=8.2e-6, **h),  # a tiny add: launch-bound
        dict(flops=67e6, bytes_moved=805e6, seconds=2.0e-4, seconds_doubled=4.0e-4, **h),  # a large add
        dict(flops=1.1e12, bytes_moved=4e8, seconds=1.4e-3, seconds_doubled=2.8e-3, **h),  # a large matmul
    ]
    for _ in range(8):
        seconds = 10 ** r.uniform(-6, -2)
        cases.append(dict(flops=10 ** r.uniform(3, 13), bytes_moved=10 ** r.uniform(3, 11), seconds=seconds, seconds_doubled=seconds * r.uniform(1.0, 2.2), **_hardware(r)))
    return cases


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


def _model(r: random.Random) -> dict:
    heads = r.choice((8, 16, 32, 40, 64))
    return dict(layers=r.randrange(1, 129), kv_heads=r.choice([h for h in (1, 2, 4, 8, heads) if h <= heads]), head_dim=r.choice((64, 80, 96, 128, 256)))


def _kv_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [dict(layers=32, kv_heads=8, head_dim=128, seq_len=8192, batch=1, dtype_bytes=2), dict(layers=1, kv_heads=1, head_dim=1, seq_len=1, batch=1, dtype_bytes=1)]
    return cases + [dict(**_model(r), seq_len=r.randrange(1, 1 << 18), batch=r.randrange(1, 257), dtype_bytes=r.choice((1, 2, 4))) for _ in range(6)]


def _max_batch_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [
        dict(memory_bytes=141 * 10**9, weight_bytes=16 * 10**9, layers=32, kv_heads=8, head_dim=128, seq_len=8192, dtype_bytes=2),
        dict(memory_bytes=16 * 10**9, weight_bytes=20 * 10**9, layers=32, kv_heads=8, head_dim=128, seq_len=4096, dtype_bytes=2),
    ]
    for _ in range(6):
        cases.append(dict(memory_bytes=r.randrange(1, 200) * 10**9, weight_bytes=r.randrange(0, 150) * 10**9, **_model(r), seq_len=r.randrange(1, 1 << 17), dtype_bytes=r.choice((1, 2, 4))))
    return cases


def _decode_cases(seed: int) -> list:
    r = _rng(seed)
    cases = [dict(weight_bytes=16.06e9, kv_bytes_per_sequence=1.07e9, batch=1, bandwidth=4.141e12), dict(weight_bytes=16.06e9, kv_bytes_per_sequence=1.07e9, batch=64, bandwidth=4.141e12)]
    return cases + [dict(weight_bytes=r.uniform(1e8, 4e11), kv_bytes_per_sequence=r.uniform(1e5, 1e10), batch=r.randrange(1, 513), bandwidth=r.uniform(2e11, 8e12)) for _ in range(6)]


def _register(name, title, notebook, function, make_cases, reference, points=1.0):
    return register(ExactProblem(name=name, title=title, notebook=notebook, function=function, make_cases=make_cases, reference=reference, correctness_points=points))


COSTS = "act2-rooflines/flops_and_bytes"
ROOFLINE = "act2-rooflines/roofline_model"
INFERENCE = "act2-rooflines/inference_arithmetic"

_register("act2.elementwise_cost", "FLOPs and bytes of an elementwise operation", COSTS, "elementwise_cost", _elementwise_cases, elementwise_cost)
_register("act2.softmax_cost", "FLOPs and bytes of a row softmax", COSTS, "softmax_cost", _softmax_cases, softmax_cost)
_register("act2.matmul_cost", "FLOPs and bytes of a matrix multiply", COSTS, "matmul_cost", _matmul_cases, matmul_cost)
_register("act2.naive_attention_cost", "FLOPs and bytes of naive attention", COSTS, "naive_attention_cost", _attention_cases, naive_attention_cost, 2.0)
_register("act2.flash_attention_cost", "FLOPs and bytes of flash attention", COSTS, "flash_attention_cost", _attention_cases, flash_attention_cost, 2.0)
_register("act2.attainable_flops", "The roofline's attainable performance", ROOFLINE, "attainable_flops", _attainable_cases, attainable_flops)
_register("act2.ridge_point", "The ridge point", ROOFLINE, "ridge_point", _ridge_cases, ridge_point)
_register("act2.roofline_point", "A measured point on the roofline", ROOFLINE, "roofline_point", _roofline_point_cases, roofline_point)
_register("act2.classify_regime", "Compute, memory or overhead bound", ROOFLINE, "classify_regime", _regime_cases, classify_regime, 2.0)
_register("act2.kv_cache_bytes", "KV-cache bytes", INFERENCE, "kv_cache_bytes", _kv_cases, kv_cache_bytes)
_register("act2.max_batch", "The largest batch that fits", INFERENCE, "max_batch", _max_batch_cases, max_batch)
_register("act2.decode_tokens_per_s", "The decode tokens/s bound", INFERENCE, "decode_tokens_per_s_bound", _decode_cases, decode_tokens_per_s_bound)


# --- Measured on this GPU: the learner's timings against the grader's own -----------------------


def _tensor_ops(device: str):
    """The operations the learner times, built lazily on the device. On a GPU they are big enough to
    take 0.1 ms or more (far above timer resolution); on a CPU (the grader's own tests) smaller."""
    import torch

    from .baselines import ieee_fp32_matmul

    generator = torch.Generator(device=device).manual_seed(random.SystemRandom().getrandbits(62))

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(dtype)

    def fp32_matmul(a, b):
        # The fp32 ceiling is measured with TF32 off; the operation must run the same way, whichever
        # of torch's two TF32 switches the learner's code used.
        with ieee_fp32_matmul():
            return a @ b

    return torch, randn, fp32_matmul


def _point_ops(device: str) -> list:
    torch, randn, fp32_matmul = _tensor_ops(device)
    gpu = device == "cuda"
    n = 1 << 26 if gpu else 1 << 22
    rows, cols = (8192, 8192) if gpu else (1024, 2048)
    size = 4096 if gpu else 384
    x, y = randn(n), randn(n)
    s = randn(rows, cols)
    a, b = randn(size, size), randn(size, size)
    ops = [
        MeasuredOp(f"add of two {n:,}-element float32 vectors", lambda: torch.add(x, y), **_cost(elementwise_cost(n, 4, 2, 1))),
        MeasuredOp(f"softmax of a {rows}x{cols} float32 matrix", lambda: torch.softmax(s, dim=-1), **_cost(softmax_cost(rows, cols, 4))),
        MeasuredOp(f"float32 matmul {size}x{size}x{size} (TF32 off)", lambda: fp32_matmul(a, b), **_cost(matmul_cost(size, size, size, 4))),
    ]
    if gpu:
        ah, bh = a.to(torch.bfloat16), b.to(torch.bfloat16)
        ops.append(MeasuredOp(f"bfloat16 matmul {size}x{size}x{size}", lambda: ah @ bh, dtype="bfloat16", **_cost(matmul_cost(size, size, size, 2))))
    return ops


def _regime_ops(device: str) -> list:
    """Each operation and its doubled twin get their own contiguous inputs, so the doubled one does
    exactly twice the work and nothing else (no strided views, no copies)."""
    torch, randn, fp32_matmul = _tensor_ops(device)
    gpu = device == "cuda"
    tiny = 4096 if gpu else 16
    n = 1 << 25 if gpu else 1 << 22
    rows, cols = (4096, 8192) if gpu else (512, 2048)
    size = 2048 if gpu else 256

    def add(count):
        x, y = randn(count), randn(count)
        return lambda: torch.add(x, y)

    def softmax(count):
        s = randn(count, cols)
        return lambda: torch.softmax(s, dim=-1)

    def matmul(m, k, dtype, multiply):
        a, b = randn(m, k, dtype=dtype), randn(k, m, dtype=dtype)
        return lambda: multiply(a, b)

    ops = [
        MeasuredOp(f"add of two {tiny:,}-element vectors (doubled: {2 * tiny:,})", add(tiny), doubled=add(2 * tiny), **_cost(elementwise_cost(tiny, 4, 2, 1))),
        MeasuredOp(f"add of two {n:,}-element vectors (doubled: {2 * n:,})", add(n), doubled=add(2 * n), **_cost(elementwise_cost(n, 4, 2, 1))),
        MeasuredOp(f"softmax of {rows}x{cols} (doubled: {2 * rows}x{cols})", softmax(rows), doubled=softmax(2 * rows), **_cost(softmax_cost(rows, cols, 4))),
        MeasuredOp(
            f"float32 matmul {size}x{size}x{size} (doubled: K = {2 * size})",
            matmul(size, size, torch.float32, fp32_matmul),
            doubled=matmul(size, 2 * size, torch.float32, fp32_matmul),
            **_cost(matmul_cost(size, size, size, 4)),
        ),
    ]
    if gpu:
        big = 4096
        ops.append(
            MeasuredOp(
                f"bfloat16 matmul {big}x{big}x{big} (doubled: K = {2 * big})",
                matmul(big, big, torch.bfloat16, torch.matmul),
                doubled=matmul(big, 2 * big, torch.bfloat16, torch.matmul),
                dtype="bfloat16",
                **_cost(matmul_cost(big, big, big, 2)),
            )
        )
    return ops


def _cost(cost: dict) -> dict:
    return {"flops": float(cost["flops"]), "bytes_moved": float(cost["bytes"])}


def judge_point(got, op: MeasuredOp, peak: float, bandwidth: float, seconds: dict) -> tuple[bool, str]:
    """The learner's point is roofline_point's dict plus the "seconds" they measured; it must agree
    with the grader's time and be consistent with that time."""
    mine = seconds["once"]
    if not isinstance(got, dict) or "seconds" not in got:
        return False, f"returned {type(got).__name__}; expected roofline_point's dict plus the 'seconds' you measured"
    if not agree(got["seconds"], mine):
        return False, (
            f"you measured {ms(got['seconds'])}, the grader measured {ms(mine)} (allowed: within a factor of {TIME_AGREEMENT}); "
            "warm up first, synchronise before reading the clock, flush the L2, report the median of one call"
        )
    expected = dict(roofline_point(op.flops, op.bytes_moved, got["seconds"], peak, bandwidth), seconds=got["seconds"])
    wrong = exact.mismatch(got, expected, rel_tol=1e-6)
    if wrong:
        return False, wrong + " (from your own measured seconds)"
    return True, f"{ms(got['seconds'])} (grader: {ms(mine)}), {expected['achieved_flops'] / 1e12:,.2f} TFLOP/s, {expected['fraction_of_roof']:.0%} of the roof"


def judge_regime(got, op: MeasuredOp, peak: float, bandwidth: float, seconds: dict) -> tuple[bool, str]:
    """The learner's regime against the one the grader's own two timings give by the same rule."""
    expected = classify_regime(op.flops, op.bytes_moved, seconds["once"], seconds["doubled"], peak, bandwidth)
    evidence = (
        f"grader measured {ms(seconds['once'])}, doubled {ms(seconds['doubled'])}; "
        f"intensity {op.flops / op.bytes_moved:,.2f}, ridge {peak / bandwidth:,.1f} FLOP/B"
    )
    if got != expected:
        return False, f"you said {got!r}, the grader's measurement says {expected!r} ({evidence})"
    return True, f"{expected} ({evidence})"


register(
    MeasuredProblem(
        name="act2.measure_point",
        title="Your GPU's roofline: measured points",
        notebook=ROOFLINE,
        function="measure_point",
        arguments=("op", "flops", "bytes_moved", "peak_flops", "bandwidth"),
        make_ops=_point_ops,
        judge=judge_point,
    )
)
register(
    MeasuredProblem(
        name="act2.classify_op",
        title="Regimes of measured operations",
        notebook=ROOFLINE,
        function="classify_op",
        arguments=("op", "op_doubled", "flops", "bytes_moved", "peak_flops", "bandwidth"),
        make_ops=_regime_ops,
        judge=judge_regime,
    )
)
