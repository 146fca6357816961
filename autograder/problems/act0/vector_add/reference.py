"""out = x + y: the reference in float64, the library's torch.add, and the traffic of one call."""

from __future__ import annotations

import torch

from ..streams import three_streams, two_vectors


def make_inputs(n: int, seed: int, device: str) -> dict:
    x, y = two_vectors(n, seed, device)
    return {"x": x, "y": y}


def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.double() + y.double()


def library(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.add(x, y)


bytes_moved = three_streams


def flops(n: int) -> float:
    return float(n)
