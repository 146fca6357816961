"""Your GPU's roofline, measured points: the operations the learner times, and their point judged
against the grader's own measurement of the same operation."""

from __future__ import annotations

from .... import exact
from ....measured import TIME_AGREEMENT, MeasuredOp, agree, ms
from .. import operations
from ..models import roofline_point

make_ops = operations.point_ops


def judge(got, op: MeasuredOp, peak: float, bandwidth: float, seconds: dict) -> tuple[bool, str]:
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
