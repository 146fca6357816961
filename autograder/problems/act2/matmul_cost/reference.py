"""FLOPs and bytes of a matrix multiply: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import DTYPE_BYTES, rng

reference = models.matmul_cost


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [dict(m=1, n=1, k=1, dtype_bytes=4), dict(m=1823, n=781, k=129, dtype_bytes=2), dict(m=1, n=4096, k=4096, dtype_bytes=2)]
    return cases + [dict(m=r.randrange(1, 1 << 15), n=r.randrange(1, 1 << 15), k=r.randrange(1, 1 << 15), dtype_bytes=r.choice(DTYPE_BYTES)) for _ in range(6)]
