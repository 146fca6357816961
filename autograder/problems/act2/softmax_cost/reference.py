"""FLOPs and bytes of a row softmax: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import DTYPE_BYTES, rng

reference = models.softmax_cost


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [dict(rows=1, cols=1, dtype_bytes=4), dict(rows=4096, cols=1823, dtype_bytes=2)]
    return cases + [dict(rows=r.randrange(1, 1 << 16), cols=r.randrange(1, 1 << 16), dtype_bytes=r.choice(DTYPE_BYTES)) for _ in range(6)]
