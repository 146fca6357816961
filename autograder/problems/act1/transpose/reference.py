"""out = x.T for a float32 matrix: the reference in float64, the library's copying transpose, and the
traffic of one call (every float read once and written once)."""

from __future__ import annotations

import torch


def make_inputs(size, seed: int, device: str) -> dict:
    rows, cols = size
    generator = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32)}


def reference(x: torch.Tensor) -> torch.Tensor:
    return x.double().t()


def library(x: torch.Tensor) -> torch.Tensor:
    # x.t().contiguous(), except that it always copies: for a 1 x n or n x 1 matrix x.t() is already
    # contiguous and .contiguous() would hand back a view of x.
    return x.t().clone(memory_format=torch.contiguous_format)


def bytes_moved(size) -> float:
    rows, cols = size
    return 8.0 * rows * cols  # every float read once and written once


def flops(size) -> float:
    return 0.0


def describe_size(size) -> str:
    return "x".join(str(d) for d in size)
