"""What Act 0's two problems share: two float32 vectors in, one out.

One call moves 12 bytes per element and does one (vector add) or two (SAXPY) FLOPs per element:
far left on the roofline, graded as a fraction of this GPU's measured copy bandwidth.
"""

from __future__ import annotations

import torch


def two_vectors(n: int, seed: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=generator, device=device, dtype=torch.float32)
    y = torch.randn(n, generator=generator, device=device, dtype=torch.float32)
    return x, y


def three_streams(n: int) -> float:
    """Reads x and y, writes the output: 3 x 4 bytes per element."""
    return 12.0 * n
