"""out = a * x + y: the reference in float64, the library's one fused torch.add, and the traffic of one call."""

from __future__ import annotations

import torch

from ..streams import three_streams, two_vectors


def make_inputs(n: int, seed: int, device: str) -> dict:
    x, y = two_vectors(n, seed, device)
    # A scale drawn from the seed too, so a kernel that hard-codes a constant cannot pass.
    a = float(torch.empty(1).uniform_(-3.0, 3.0, generator=torch.Generator().manual_seed(seed)))
    return {"a": a, "x": x, "y": y}


def reference(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return a * x.double() + y.double()


def library(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # One fused kernel: y + a * x in a single pass, the fair baseline for a one-pass kernel.
    return torch.add(y, x, alpha=a)


bytes_moved = three_streams


def flops(n: int) -> float:
    return 2.0 * n
