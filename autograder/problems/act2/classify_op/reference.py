"""Regimes of measured operations: the operations (each with its doubled twin) the learner times, and
their regime judged against the one the grader's own timings give."""

from __future__ import annotations

from ....measured import MeasuredOp, ms
from .. import operations
from ..models import classify_regime

make_ops = operations.regime_ops


def judge(got, op: MeasuredOp, peak: float, bandwidth: float, seconds: dict) -> tuple[bool, str]:
    """The learner's regime against the one the grader's own two timings give by the same rule."""
    expected = classify_regime(op.flops, op.bytes_moved, seconds["once"], seconds["doubled"], peak, bandwidth)
    evidence = (
        f"grader measured {ms(seconds['once'])}, doubled {ms(seconds['doubled'])}; "
        f"intensity {op.flops / op.bytes_moved:,.2f}, ridge {peak / bandwidth:,.1f} FLOP/B"
    )
    if got != expected:
        return False, f"you said {got!r}, the grader's measurement says {expected!r} ({evidence})"
    return True, f"{expected} ({evidence})"
