"""The roofline's attainable performance: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import hardware, rng

reference = models.attainable_flops


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [dict(intensity=1 / 12, peak_flops=50.5e12, bandwidth=4.141e12), dict(intensity=1e4, peak_flops=797.4e12, bandwidth=4.141e12)]
    cases.append(dict(intensity=797.4e12 / 4.141e12, peak_flops=797.4e12, bandwidth=4.141e12))
    return cases + [dict(intensity=10 ** r.uniform(-2, 4), **hardware(r)) for _ in range(8)]
