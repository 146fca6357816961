"""The largest batch that fits: the reference answer and the cases it is checked on."""

from __future__ import annotations

from .. import models
from ..models import model, rng

reference = models.max_batch


def make_cases(seed: int) -> list:
    r = rng(seed)
    cases = [
        dict(memory_bytes=141 * 10**9, weight_bytes=16 * 10**9, layers=32, kv_heads=8, head_dim=128, seq_len=8192, dtype_bytes=2),
        dict(memory_bytes=16 * 10**9, weight_bytes=20 * 10**9, layers=32, kv_heads=8, head_dim=128, seq_len=4096, dtype_bytes=2),
    ]
    for _ in range(6):
        cases.append(dict(memory_bytes=r.randrange(1, 200) * 10**9, weight_bytes=r.randrange(0, 150) * 10**9, **model(r), seq_len=r.randrange(1, 1 << 17), dtype_bytes=r.choice((1, 2, 4))))
    return cases
