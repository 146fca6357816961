"""Predict, then measure, on any machine: the learner's predictions of the exercise's operations on two
made-up GPUs and of operations drawn from the seed on random ceilings, checked exactly."""

from __future__ import annotations

from .. import predictions

reference = predictions.predict
describe_case = predictions.describe_case
# Ceilings of no real GPU (a small card and a large one), so nothing measured on this machine can
# stand in for the arithmetic.
MADE_UP_GPUS = [dict(peak_flops=60e12, bandwidth=0.3e12), dict(peak_flops=750e12, bandwidth=4.2e12)]


def make_cases(seed: int) -> list:
    return predictions.make_cases(seed, list(predictions.OPERATIONS), MADE_UP_GPUS)


def judge(got, expected: dict, case: dict) -> str | None:
    """The arithmetic exactly, then the limit: every case is clear-cut (its roofline time under half a
    microsecond, where launching the kernel costs more, or over 50), so the limit has one right answer."""
    wrong = predictions.check_arithmetic(got, **case)
    if wrong:
        return wrong
    if got["limit"] != expected["limit"]:
        return f"limit is {got['limit']!r}, expected {expected['limit']!r}: the roofline time is {expected['seconds'] * 1e6:,.3g} us"
    return None
