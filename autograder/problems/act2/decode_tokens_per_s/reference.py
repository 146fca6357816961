"""The decode tokens/s bound: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import rng

reference = models.decode_tokens_per_s_bound


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [dict(weight_bytes=16.06e9, kv_bytes_per_sequence=1.07e9, batch=1, bandwidth=4.141e12), dict(weight_bytes=16.06e9, kv_bytes_per_sequence=1.07e9, batch=64, bandwidth=4.141e12)]
    return cases + [dict(weight_bytes=r.uniform(1e8, 4e11), kv_bytes_per_sequence=r.uniform(1e5, 1e10), batch=r.randrange(1, 513), bandwidth=r.uniform(2e11, 8e12)) for _ in range(6)]
