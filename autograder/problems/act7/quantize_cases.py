"""The cases of Act 7's quantisation exercises: fixed edge cases first, then weights drawn from the seed
as a trained layer has them, some with outliers; the dequantisation cases are the references' own
quantisations of the same weights."""

from __future__ import annotations

import random

import torch

from .quantize import quantize_int4, quantize_int8


def _weights(generator: torch.Generator, n: int, k: int, outliers: int = 0) -> torch.Tensor:
    """Weights as a trained layer has them: about N(0, 0.02), with a few channels of outliers 20-50x larger."""
    w = 0.02 * torch.randn(n, k, generator=generator)
    for _ in range(outliers):
        row = int(torch.randint(0, n, (1,), generator=generator))
        col = int(torch.randint(0, k, (1,), generator=generator))
        w[row, col] = float(torch.empty(1).uniform_(0.4, 1.0, generator=generator)) * (1 if col % 2 else -1)
    return w


def int8_cases(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    r = random.Random(seed)
    edge = torch.tensor(
        [
            [0.0, 0.0, 0.0, 0.0, 0.0],  # a row of zeros: scale 1.0, q all 0
            [-2.0, 1.0, 0.5, -0.25, 2.0],  # the largest magnitude twice, with both signs: q = -127 and 127
            [-3.0, 0.1, 0.2, 0.3, 0.4],  # the largest magnitude is negative
            [1e-30, -1e-30, 0.0, 5e-31, 1e-30],  # tiny values: the scale is tiny, not zero
        ]
    )
    cases = [{"w": torch.tensor([[0.7]])}, {"w": edge}, {"w": _weights(generator, 3, 257, outliers=2)}]
    for _ in range(3):
        cases.append({"w": _weights(generator, r.randrange(1, 70), r.randrange(1, 1100), outliers=r.randrange(0, 8))})
    return cases


def dequantize_int8_cases(seed: int) -> list[dict]:
    return [dict(zip(("q", "scale"), quantize_int8(case["w"]), strict=True)) for case in int8_cases(seed)]


def pack_cases(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    r = random.Random(seed)
    every_pair = torch.arange(256, dtype=torch.int32)
    cases = [
        # Every byte value once: each (low, high) pair of nibbles.
        {"q": torch.stack([every_pair & 0xF, every_pair >> 4], dim=1).reshape(1, 512).to(torch.uint8)},
        {"q": torch.tensor([[15, 0], [0, 15]], dtype=torch.uint8)},
    ]
    for _ in range(4):
        cases.append({"q": torch.randint(0, 16, (r.randrange(1, 40), 2 * r.randrange(1, 300)), generator=generator, dtype=torch.uint8)})
    return cases


def int4_cases(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    r = random.Random(seed)
    edge = torch.zeros(5, 64)
    edge[1] = torch.linspace(0.1, 3.0, 64)  # all positive: lo is 0, zero is 0
    edge[2] = -torch.linspace(0.1, 3.0, 64)  # all negative: hi is 0, zero is 15
    edge[3] = 0.25  # one value: the range is [0, 0.25]
    edge[4, :32] = _weights(generator, 1, 32)[0]
    edge[4, 7] = 8.0  # one outlier stretches its group's step
    cases = [{"w": edge, "group_size": 32}, {"w": _weights(generator, 1, 128), "group_size": 128}]
    for group_size in (32, 64, 128):
        groups = r.randrange(1, 5)
        cases.append({"w": _weights(generator, r.randrange(1, 50), group_size * groups, outliers=r.randrange(0, 6)), "group_size": group_size})
    cases.append({"w": _weights(generator, r.randrange(1, 20), 128 * r.randrange(1, 4), outliers=3), "group_size": 128})
    return cases


def dequantize_int4_cases(seed: int) -> list[dict]:
    out = []
    for case in int4_cases(seed):
        packed, scale, zero = quantize_int4(case["w"], case["group_size"])
        out.append({"packed": packed, "scale": scale, "zero": zero, "group_size": case["group_size"]})
    return out
