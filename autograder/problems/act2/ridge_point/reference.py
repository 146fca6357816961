"""The ridge point: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import hardware, rng

reference = models.ridge_point


def make_cases(seed: int) -> list:
    r = rng(seed)
    return [dict(peak_flops=50.5e12, bandwidth=4.141e12)] + [hardware(r) for _ in range(6)]
