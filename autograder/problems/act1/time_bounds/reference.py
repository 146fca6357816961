"""The same operation on different chips: the reference answer and the cases it is checked on."""

from __future__ import annotations

import random

from .. import gpu_specs
from ..gpu_specs import DTYPES, SPEC_TABLE, random_gpu

reference = gpu_specs.time_bounds


def make_cases(seed: int) -> list:
    r = random.Random(seed)
    table = {name: spec for name, spec in SPEC_TABLE.items() if "bf16" in spec["flops_per_clock_per_sm"]}
    cases = [
        # A bf16 4096^3 matmul: compute-bound everywhere.
        dict(flops=2 * 4096**3, bytes_moved=3 * 4096 * 4096 * 2, dtype="bf16", gpus=table),
        # A bf16 elementwise add of 2^26 elements: memory-bound everywhere.
        dict(flops=1 << 26, bytes_moved=6 << 26, dtype="bf16", gpus=table),
        # Intensity 250 FLOP/byte: compute-bound on the A100 and H200, memory-bound on the H100 and B200.
        dict(flops=250 * 10**9, bytes_moved=10**9, dtype="bf16", gpus=table),
    ]
    for _ in range(5):
        dtype = r.choice(DTYPES)
        gpus = {f"gpu{i}": random_gpu(r) for i in range(r.randrange(1, 5))}
        for spec in gpus.values():
            spec["flops_per_clock_per_sm"][dtype] = r.choice((128, 512, 1024, 4096))
        cases.append(dict(flops=10 ** r.uniform(6, 15), bytes_moved=10 ** r.uniform(6, 11), dtype=dtype, gpus=gpus))
    return cases
