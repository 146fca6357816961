"""sum_j softmax(x)_j v_j over each row of float32 x and v, the core of FlashAttention with a head
dimension of 1: inputs whose maximum moves along the row, the reference in float64, the eager
PyTorch baseline, and the traffic of one call (x and v read once)."""

from __future__ import annotations

import torch

# Rows of the float64 reference computed at a time: at most this many elements (512 MiB in float64).
_REFERENCE_ELEMENTS = 1 << 26


def make_inputs(size: tuple[int, int], seed: int, device: str) -> dict:
    rows, cols = size
    generator = torch.Generator(device=device).manual_seed(seed)
    ramp = torch.arange(cols, device=device, dtype=torch.float32) / max(cols - 1, 1)
    x = torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32) * 4.0
    # Each row is shifted by up to +-120: exp() overflows float32 past 88, so a kernel that never
    # subtracts a maximum returns inf / inf. Each row also climbs (even rows) or falls (odd rows) by 4
    # to 16 from its first element to its last: in a climbing row the maximum grows block after block
    # and what was summed must be rescaled every time; in a falling row the first blocks hold it.
    shift = torch.empty(rows, 1, device=device, dtype=torch.float32).uniform_(-120.0, 120.0, generator=generator)
    tilt = torch.empty(rows, 1, device=device, dtype=torch.float32).uniform_(4.0, 16.0, generator=generator)
    tilt[1::2] *= -1.0
    # Values around 1 to 3 that grow along the row: a sum that weights the blocks wrongly (one not
    # rescaled to the new maximum) lands on the wrong part of the row, far from the right answer.
    v = torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32) + 1.0 + 2.0 * ramp
    return {"x": x + shift + tilt * ramp, "v": v}


def reference(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """sum_j softmax(x)_j v_j per row, in float64, a few rows at a time."""
    out = torch.empty(x.shape[0], dtype=torch.float64, device=x.device)
    step = max(1, _REFERENCE_ELEMENTS // max(x.shape[1], 1))
    for start in range(0, x.shape[0], step):
        rows = slice(start, start + step)
        out[rows] = (torch.softmax(x[rows].double(), dim=-1) * v[rows].double()).sum(dim=-1)
    return out


def library(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # Eager PyTorch: the probabilities are written to memory, read back, multiplied and summed.
    return (torch.softmax(x, dim=-1) * v).sum(dim=-1)


def bytes_moved(size: tuple[int, int]) -> float:
    # One read of x and of v, and one float per row written: the minimum for any kernel.
    rows, cols = size
    return 4.0 * (2 * rows * cols + rows)


def flops(size: tuple[int, int]) -> float:
    # Per element: the max, the subtraction, the exponential, the two multiply-adds of the sums.
    return 6.0 * size[0] * size[1]


def describe_size(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]:,}"
