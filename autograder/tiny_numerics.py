"""The tiny transformer's RMSNorm and rotary position embeddings, their statistics and rotations taken in
float32 (float64 for a float64 model) whatever the tensors' dtype; the megakernels' reference uses them too."""

from __future__ import annotations

import torch

from .tiny_config import TinyConfig


def wide_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype statistics, rotations and softmax are computed in: float32, or float64 for a float64 model."""
    return torch.promote_types(dtype, torch.float32)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * weight, the statistic taken in float32 (at least) whatever x's dtype."""
    x32 = x.to(wide_dtype(x.dtype))
    normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.to(x32.dtype)).to(x.dtype)


def rope_tables(config: TinyConfig, device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position * frequency, [max_seq_len, head_dim // 2], float32."""
    half = config.head_dim // 2
    freqs = 1.0 / config.rope_theta ** (torch.arange(half, dtype=torch.float64) / half)
    angles = torch.arange(config.max_seq_len, dtype=torch.float64)[:, None] * freqs[None, :]
    return angles.cos().float().to(device), angles.sin().float().to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[i], x[i + head_dim/2]) by the position's angles (the "rotate half" layout).

    x: [..., seq, head_dim]; cos, sin: broadcastable to [..., seq, head_dim // 2].
    """
    x32 = x.to(wide_dtype(x.dtype))
    first, second = x32.chunk(2, dim=-1)
    rotated = torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return rotated.to(x.dtype)

