"""The sum of a float32 vector: the reference in float64, cupy.sum as the library, and the traffic of
one call (the vector read once, one float written)."""

from __future__ import annotations

import torch


def make_inputs(n: int, seed: int, device: str) -> dict:
    # A mean drawn from the seed, away from zero and of either sign, so the sum grows with n and is
    # never close to zero: a relative tolerance means something, and another seed's sum is far off.
    # It is drawn on the host, the same on every device.
    magnitude = float(torch.empty(1).uniform_(0.25, 1.0, generator=torch.Generator().manual_seed(seed)))
    mean = magnitude * (1.0 if seed % 2 else -1.0)
    x = torch.randn(n, generator=torch.Generator(device=device).manual_seed(seed), device=device, dtype=torch.float32)
    return {"x": x.add_(mean)}


def reference(x: torch.Tensor) -> torch.Tensor:
    return x.double().sum()


def library(x: torch.Tensor) -> torch.Tensor:
    """cupy.sum on the GPU (CUB's device-wide reduction, float32 accumulation), returned as a 0-d
    torch tensor through DLPack. Without a GPU (the problem is never graded there, but its checks
    are tested) torch.sum stands in."""
    if not x.is_cuda:
        return x.sum()
    import cupy

    return torch.from_dlpack(cupy.sum(cupy.from_dlpack(x)))


def bytes_moved(n: int) -> float:
    return 4.0 * n + 4.0


def flops(n: int) -> float:
    return float(max(n - 1, 0))
