"""A measured point on the roofline: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import hardware, rng

reference = models.roofline_point


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = []
    for _ in range(8):
        flops = 10 ** r.uniform(3, 13)
        bytes_moved = 10 ** r.uniform(3, 11)
        cases.append(dict(flops=flops, bytes_moved=bytes_moved, seconds=10 ** r.uniform(-6, -1), **hardware(r)))
    return cases
