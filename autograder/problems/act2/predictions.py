"""Predict, then measure: the answers ``predict_cost`` (exact, any machine) and ``predict_time``
(the same predictions judged against the grader's timing of this GPU) share.

An operation is plain data: ``{"op": "add", "n", "dtype"}`` (``torch.add(x, y)``), ``{"op":
"matmul", "m", "n", "k", "dtype"}`` (``a @ b``), ``{"op": "transpose", "rows", "cols", "dtype"}``
(``x.t().contiguous()``) or ``{"op": "row_sum", "rows", "cols", "dtype"}`` (``x.sum(dim=-1)``). A
prediction is ``{"bytes", "flops", "seconds", "limit"}``: the minimum traffic and the FLOPs (whole
numbers, checked exactly), the roofline time those counts give at the ceilings passed in, and the
limit the learner expects to set the time ("memory", "compute" or "overhead").
"""

from __future__ import annotations

import math

from .models import elementwise_cost, hardware, matmul_cost, rng

BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
LIMITS = ("memory", "compute", "overhead")
# A kernel launch, and the first access of its memory, cost microseconds on every GPU the course
# supports. The model answer calls an operation overhead-bound when its roofline time is under
# OVERHEAD_BELOW_S; the cases are drawn with roofline times under 0.5 us or over 50 us (SURE_SMALL_S,
# SURE_LARGE_S), so every threshold a learner can defend (a microsecond, ten) gives the same answers.
OVERHEAD_BELOW_S = 5e-6
SURE_SMALL_S, SURE_LARGE_S = 0.5e-6, 50e-6
# What the time must follow from: seconds within this of max(flops / peak, bytes / bandwidth) of the
# learner's own counts. Float rounding only: a time read off a clock is never this close.
ARITHMETIC_TOL = 1e-9


# The operations the exercise asks about, timed by predict_time on the learner's GPU, all float16 so
# that one measured roof (the float16 matmul rate, the course's compute roof for every kernel of a
# dtype) caps them all. Sized so that each one's class is the same on every GPU the course supports,
# a T4 (320 GB/s on its data sheet) to an H200 (4.8 TB/s):
# - the large ones move 0.4 to 1.1 GB (far beyond any L2): even an H200 needs about 100 us or more
#   for each at its roofline, a T4 milliseconds, so no launch cost shows;
# - the add and the row sum stream memory the way a copy does and land near copy bandwidth; the
#   transpose reads along columns, which may cost it a share of that bandwidth (still memory-bound);
# - the 8192^3 matmul is the very call the judge measures the float16 ceiling with
#   (ceilings.measure_for), 2,731 FLOP/B, far right of every ridge point;
# - the small ones move 6 KiB and 24 KiB: under 0.1 us at a T4's bandwidth, while any kernel takes a
#   microsecond or more from start to end. On an H100 the grader measured a float32 add of 4,096
#   elements, eight times these bytes, at 5.9 us
#   (results/runs/2026-11-25-2xh100-multi-gpu/call2/graded/act2.classify_op.json).
OPERATIONS = (
    {"op": "add", "n": 1 << 27, "dtype": "float16"},
    {"op": "matmul", "m": 8192, "n": 8192, "k": 8192, "dtype": "float16"},
    {"op": "transpose", "rows": 16384, "cols": 16384, "dtype": "float16"},
    {"op": "row_sum", "rows": 16384, "cols": 16384, "dtype": "float16"},
    {"op": "add", "n": 1024, "dtype": "float16"},
    {"op": "matmul", "m": 64, "n": 64, "k": 64, "dtype": "float16"},
)


def counts(operation: dict) -> dict:
    """The minimum bytes and the FLOPs of one call: every input read once, every output written once."""
    b, kind = BYTES[operation["dtype"]], operation["op"]
    if kind == "add":
        cost = elementwise_cost(operation["n"], b, 2, 1)
    elif kind == "matmul":
        cost = matmul_cost(operation["m"], operation["n"], operation["k"], b)
    else:
        rows, cols = operation["rows"], operation["cols"]
        # A transpose reads and writes every element and adds nothing; a row sum reads every element,
        # adds each one into its row's total (the course counts one FLOP per element) and writes a total per row.
        cost = {"flops": 0, "bytes": 2 * rows * cols * b} if kind == "transpose" else {"flops": rows * cols, "bytes": (rows * cols + rows) * b}
    return {"bytes": cost["bytes"], "flops": cost["flops"]}


def roofline_seconds(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> float:
    return max(flops / peak_flops, bytes_moved / bandwidth)


def roofline_side(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> str:
    return "compute" if flops / peak_flops >= bytes_moved / bandwidth else "memory"


def predict(operation: dict, peak_flops: float, bandwidth: float) -> dict:
    """The model answer: the counts, the roofline time, and the limit (overhead under a few microseconds)."""
    c = counts(operation)
    seconds = roofline_seconds(c["flops"], c["bytes"], peak_flops, bandwidth)
    limit = "overhead" if seconds < OVERHEAD_BELOW_S else roofline_side(c["flops"], c["bytes"], peak_flops, bandwidth)
    return {**c, "seconds": seconds, "limit": limit}


def describe(operation: dict) -> str:
    o = operation
    if o["op"] == "add":
        return f"torch.add(x, y), x and y {o['n']:,} {o['dtype']}"
    if o["op"] == "matmul":
        return f"a @ b, a {o['m']}x{o['k']} and b {o['k']}x{o['n']} {o['dtype']}"
    code = "x.t().contiguous()" if o["op"] == "transpose" else "x.sum(dim=-1)"
    return f"{code}, x {o['rows']}x{o['cols']} {o['dtype']}"


def check_arithmetic(got, operation: dict, peak_flops: float, bandwidth: float) -> str | None:
    """What is wrong with a prediction before any measurement: its shape, its counts, and its time,
    which must follow from its own counts and the ceilings passed in (so a time read off a clock,
    which never lands within ARITHMETIC_TOL of that, is no prediction)."""
    if not isinstance(got, dict) or set(got) != {"bytes", "flops", "seconds", "limit"}:
        return f"returned {got!r:.120}; expected a dict with keys 'bytes', 'flops', 'seconds' and 'limit'"
    expected = counts(operation)
    for key, what in (("bytes", "minimum bytes"), ("flops", "FLOPs")):
        if not isinstance(got[key], (int, float)) or isinstance(got[key], bool) or got[key] != expected[key]:
            return f"{key} is {got[key]!r}; the {what} of {describe(operation)} are {expected[key]:,}"
    seconds = roofline_seconds(got["flops"], got["bytes"], peak_flops, bandwidth)
    if not isinstance(got["seconds"], (int, float)) or not math.isclose(got["seconds"], seconds, rel_tol=ARITHMETIC_TOL):
        return (
            f"seconds is {got['seconds']!r}; your own counts at these ceilings give max(flops / peak_flops, bytes / bandwidth) = "
            f"{seconds!r}: a prediction is that arithmetic, not a measurement"
        )
    if got["limit"] not in LIMITS:
        return f"limit is {got['limit']!r}; expected one of {', '.join(map(repr, LIMITS))}"
    return None


def _draw(r, large: bool) -> dict:
    """A random operation, large (hundreds of MB, or a matmul whose inner sizes are thousands: a skinny
    one may still be memory-bound) or small (kilobytes)."""
    kind, dtype = r.choice(("add", "matmul", "transpose", "row_sum")), r.choice(tuple(BYTES))

    def size(low: float, high: float) -> int:
        return max(1, round(2 ** r.uniform(low, high)))

    if kind == "add":
        return {"op": kind, "n": size(26, 29) if large else size(0, 12), "dtype": dtype}
    if kind == "matmul":
        if large:
            return {"op": kind, "m": size(0, 14), "n": size(12, 14.5), "k": size(12, 14.5), "dtype": dtype}
        return {"op": kind, "m": size(0, 6), "n": size(0, 6), "k": size(0, 6), "dtype": dtype}
    return {"op": kind, "rows": size(12, 15) if large else size(0, 7), "cols": size(12, 15) if large else size(0, 7), "dtype": dtype}


def clear_cut(operation: dict, peak_flops: float, bandwidth: float) -> bool:
    c = counts(operation)
    seconds = roofline_seconds(c["flops"], c["bytes"], peak_flops, bandwidth)
    return seconds < SURE_SMALL_S or seconds > SURE_LARGE_S


def make_cases(seed: int, operations: list[dict], made_up_gpus: list[dict], drawn: int = 10) -> list[dict]:
    """``operations`` on each of ``made_up_gpus``, then ``drawn`` random operations on random
    ceilings, each clear-cut (its roofline time far from a launch's)."""
    cases = [dict(operation=dict(o), **gpu) for gpu in made_up_gpus for o in operations]
    r = rng(seed)
    while len(cases) < len(operations) * len(made_up_gpus) + drawn:
        case = dict(operation=_draw(r, large=len(cases) % 2 == 0), **hardware(r))
        if clear_cut(**case):
            cases.append(case)
    return cases


def describe_case(case: dict) -> str:
    return f"{describe(case['operation'])} at {case['peak_flops'] / 1e12:,.1f} TFLOP/s and {case['bandwidth'] / 1e9:,.0f} GB/s"
