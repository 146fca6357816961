"""KV-cache bytes: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import model, rng

reference = models.kv_cache_bytes


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [dict(layers=32, kv_heads=8, head_dim=128, seq_len=8192, batch=1, dtype_bytes=2), dict(layers=1, kv_heads=1, head_dim=1, seq_len=1, batch=1, dtype_bytes=1)]
    return cases + [dict(**model(r), seq_len=r.randrange(1, 1 << 18), batch=r.randrange(1, 257), dtype_bytes=r.choice((1, 2, 4))) for _ in range(6)]
