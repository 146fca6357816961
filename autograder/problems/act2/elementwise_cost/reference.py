"""FLOPs and bytes of an elementwise operation: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import DTYPE_BYTES, rng

reference = models.elementwise_cost


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [dict(n=1, dtype_bytes=4, n_inputs=2, flops_per_element=1), dict(n=1023, dtype_bytes=2, n_inputs=1, flops_per_element=8)]
    cases += [dict(n=r.randrange(1, 1 << 30), dtype_bytes=r.choice(DTYPE_BYTES), n_inputs=r.randrange(1, 5), flops_per_element=r.randrange(1, 20)) for _ in range(6)]
    return cases
