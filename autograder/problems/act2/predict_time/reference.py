"""Predict, then measure, on this GPU: the exercise's operations built here (their tensors made on the
first call, so the learner's process, which only predicts, never holds them), and each prediction
judged against the grader's own time for the operation, taken once the learner's process is gone."""

from __future__ import annotations

import random

from ....measured import MeasuredOp, ms
from .. import predictions

# Two readings of the grader's time against the roofline time of the operation's counts at this GPU's
# measured ceilings (ratio = measured / roofline):
# - NEAR: within 1.5x, the roofline sets the time and a prediction of it is right within 1.5x. The
#   add and the matmul land within a few percent of their roofs on an H100
#   (results/runs/2026-11-25-2xh100-multi-gpu/call2/graded/act2.measure_point.json: 102% and 104%);
#   1.5x leaves room for a T4's clocks and another GPU's library.
# - OVERHEAD_AT: ten times the roofline time or more, the roofline is not what sets the time: the
#   small operations' ratios are over 10 on a T4 and in the hundreds on an H100 (predictions.OPERATIONS),
#   while no large operation streams memory ten times slower than a copy.
# Between the two the roofline's side (memory or compute) is still the limit; the operation reaches
# only part of that roof (a transpose's column reads), and the message says how much.
NEAR = 1.5
OVERHEAD_AT = 10.0


def make_ops(device: str) -> list:
    """Each operation's FLOPs capped by its dtype's matmul rate: float16, spec.toml's compute_dtype."""
    return [MeasuredOp(predictions.describe(o), _lazy(o, device), dtype=o["dtype"], operation=dict(o), **_costs(o)) for o in predictions.OPERATIONS]


def _costs(operation: dict) -> dict:
    c = predictions.counts(operation)
    return {"flops": float(c["flops"]), "bytes_moved": float(c["bytes"])}


def _lazy(operation: dict, device: str):
    built: dict = {}

    def call():
        if not built:
            built.update(_build(operation, device))
        return built["run"]()

    return call


def _build(o: dict, device: str) -> dict:
    import torch

    generator = torch.Generator(device=device).manual_seed(random.SystemRandom().getrandbits(62))
    dtype = getattr(torch, o["dtype"])

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(dtype)

    if o["op"] == "add":
        x, y = randn(o["n"]), randn(o["n"])
        return {"run": lambda: torch.add(x, y)}
    if o["op"] == "matmul":
        a, b = randn(o["m"], o["k"]), randn(o["k"], o["n"])
        return {"run": lambda: a @ b}
    x = randn(o["rows"], o["cols"])
    return {"run": (lambda: x.t().contiguous()) if o["op"] == "transpose" else (lambda: x.sum(dim=-1))}


def judge(got, op: MeasuredOp, peak: float, bandwidth: float, seconds: dict) -> tuple[bool, str]:
    """The arithmetic exactly (as act2.predict_cost checks it), then the limit against the grader's time."""
    wrong = predictions.check_arithmetic(got, op.operation, peak, bandwidth)
    if wrong:
        return False, wrong
    bound = predictions.roofline_seconds(op.flops, op.bytes_moved, peak, bandwidth)
    measured = seconds["once"]
    ratio = measured / bound
    side = predictions.roofline_side(op.flops, op.bytes_moved, peak, bandwidth)
    expected = "overhead" if ratio >= OVERHEAD_AT else side
    evidence = f"you predicted {ms(bound)} at the roofline, the grader measured {ms(measured)} ({ratio:,.1f}x)"
    if got["limit"] != expected:
        why = (
            f"{OVERHEAD_AT:g}x the roofline time or more: launching and finishing the kernel, not the {side} roof, set the time"
            if expected == "overhead"
            else f"within {OVERHEAD_AT:g}x of the roofline time: the {side} roof sets the time"
        )
        return False, f"you said {got['limit']!r}, the grader's measurement says {expected!r}: {evidence}, {why}"
    if expected == "overhead":
        return True, f"overhead: {evidence}, far above the roofline"
    if ratio <= NEAR:
        return True, f"{expected}: {evidence}, within {NEAR:g}x"
    return True, f"{expected}: {evidence}; the operation reaches {1 / ratio:.0%} of its {side} roof"
