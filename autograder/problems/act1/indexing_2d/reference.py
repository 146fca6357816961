"""out = row_scale[:, None] * x + col_shift[None, :] for a float32 x whose rows lie `pitch` floats
apart: the reference in float64, the library's one fused torch.addcmul, and the traffic of one call."""

from __future__ import annotations

import torch


def make_inputs(size, seed: int, device: str) -> dict:
    rows, cols, pitch = size
    g = torch.Generator(device=device).manual_seed(seed)
    base = torch.randn(rows, pitch, generator=g, device=device, dtype=torch.float32)
    x = base[:, :cols]  # strides (pitch, 1): contiguous rows, a gap after each one when pitch > cols
    row_scale = torch.rand(rows, generator=g, device=device, dtype=torch.float32) * 4.0 - 2.0
    col_shift = torch.randn(cols, generator=g, device=device, dtype=torch.float32)
    return {"x": x, "row_scale": row_scale, "col_shift": col_shift}


def reference(x: torch.Tensor, row_scale: torch.Tensor, col_shift: torch.Tensor) -> torch.Tensor:
    return row_scale.double()[:, None] * x.double() + col_shift.double()[None, :]


def library(x: torch.Tensor, row_scale: torch.Tensor, col_shift: torch.Tensor) -> torch.Tensor:
    # One fused kernel: col_shift + row_scale * x, broadcast over rows and columns.
    return torch.addcmul(col_shift[None, :], row_scale[:, None], x)


def bytes_moved(size) -> float:
    rows, cols, _ = size
    return 4.0 * (2 * rows * cols + rows + cols)  # read x, write out, read the two vectors once


def flops(size) -> float:
    return 2.0 * size[0] * size[1]


def describe_size(size) -> str:
    rows, cols, pitch = size
    shape = f"{rows}x{cols}"
    return shape if pitch == cols else f"{shape} (row pitch {pitch})"
