"""Compute, memory or overhead bound: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import hardware, rng

reference = models.classify_regime


def make_cases(seed: int) -> list:
    r = rng(seed)
    h = dict(peak_flops=800e12, bandwidth=4e12)
    cases = [
        dict(flops=1e3, bytes_moved=12e3, seconds=8e-6, seconds_doubled=8.2e-6, **h),  # a tiny add: launch-bound
        dict(flops=67e6, bytes_moved=805e6, seconds=2.0e-4, seconds_doubled=4.0e-4, **h),  # a large add
        dict(flops=1.1e12, bytes_moved=4e8, seconds=1.4e-3, seconds_doubled=2.8e-3, **h),  # a large matmul
    ]
    for _ in range(8):
        seconds = 10 ** r.uniform(-6, -2)
        cases.append(dict(flops=10 ** r.uniform(3, 13), bytes_moved=10 ** r.uniform(3, 11), seconds=seconds, seconds_doubled=seconds * r.uniform(1.0, 2.2), **hardware(r)))
    return cases
