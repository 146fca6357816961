"""softmax(x) over the last dimension of a float32 matrix: inputs whose exp() overflows without the
row's maximum subtracted, the reference in float64, torch.softmax, and the traffic of one call."""

from __future__ import annotations

import torch


def make_inputs(size: tuple[int, int], seed: int, device: str) -> dict:
    rows, cols = size
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32) * 4.0
    # Each row is shifted by up to +-120: exp() of such values overflows float32 (it does past 88),
    # so a kernel that forgets to subtract the row's maximum returns inf / inf = NaN.
    shift = torch.empty(rows, 1, device=device, dtype=torch.float32).uniform_(-120.0, 120.0, generator=generator)
    return {"x": x + shift}


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), dim=-1)


def library(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def bytes_moved(size: tuple[int, int]) -> float:
    # One read and one write of every float32 element: the minimum for any softmax.
    return 2.0 * size[0] * size[1] * 4


def flops(size: tuple[int, int]) -> float:
    # max, subtract, exp, sum, divide: about five operations per element.
    return 5.0 * size[0] * size[1]


def describe_size(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"
