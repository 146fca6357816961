"""C = (A @ B^T) * scale_a[:, None] * scale_b[None, :] for fp8 e4m3 A (M x K) and B (N x K), both
row-major (so both are K-major, the layout fp8 tensor cores read), float32 scales of shape (1,)
(per tensor) or (M,) and (N,) (per row), and C in bf16.

The inputs are quantised as a real fp8 layer quantises them: each scale is the absolute maximum of
its tensor or row over 448, the largest e4m3 value, so that the fp8 values use the format's range.
The reference multiplies the fp8 values exactly in float64; the tolerance comes from the float32
accumulation of the same products rounded to bf16 (torch._scaled_mm itself needs shapes that are
multiples of 16 and a GPU of compute capability 8.9, so it is the speed baseline, not the
correctness one).
"""

from __future__ import annotations

import torch

from ....problem import Baseline

NAME = "act7.fp8_matmul"
E4M3_MAX = 448.0


def _quantise(t: torch.Tensor, per_row: bool) -> tuple[torch.Tensor, torch.Tensor]:
    amax = t.abs().amax(dim=1) if per_row else t.abs().amax().reshape(1)
    scale = (amax.clamp(min=1e-12) / E4M3_MAX).to(torch.float32)
    return (t / scale[:, None] if per_row else t / scale).to(torch.float8_e4m3fn), scale


def make_inputs(size: tuple, seed: int, device: str) -> dict:
    m, n, k, scaling = size
    per_row = scaling == "row"
    generator = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, generator=generator, device=device, dtype=torch.float32)
    b = torch.randn(n, k, generator=generator, device=device, dtype=torch.float32)
    if per_row:
        # Rows of very different sizes: a kernel that applies one scale to all of them is wrong.
        a = a * torch.exp(2 * torch.rand(m, 1, generator=generator, device=device))
        b = b * torch.exp(2 * torch.rand(n, 1, generator=generator, device=device))
    a8, scale_a = _quantise(a, per_row)
    b8, scale_b = _quantise(b, per_row)
    return {"a": a8, "b": b8, "scale_a": scale_a, "scale_b": scale_b}


def reference(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor) -> torch.Tensor:
    return (a.double() @ b.double().t()) * scale_a.double()[:, None] * scale_b.double()[None, :]


def library(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor) -> torch.Tensor:
    """fp8 tensor cores' arithmetic: every product of two e4m3 values is exact in float32, summed in
    float32, scaled, and rounded once to bf16."""
    return ((a.float() @ b.float().t()) * scale_a[:, None] * scale_b[None, :]).to(torch.bfloat16)


def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor) -> torch.Tensor:
    """torch._scaled_mm (cuBLASLt's fp8 GEMM): B^T is passed as the column-major K x N matrix it wants;
    per-tensor scales as scalars, per-row scales as (M, 1) and (1, N)."""
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        sa, sb = scale_a.reshape(()), scale_b.reshape(())
    else:
        sa, sb = scale_a.reshape(-1, 1), scale_b.reshape(1, -1)
    return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


def baseline(device) -> Baseline:
    from ....registry import get

    return Baseline(label="torch._scaled_mm (cuBLASLt fp8)", run=scaled_mm, speed_scale=get(NAME).speed_scale)


def bytes_moved(size: tuple) -> float:
    m, n, k, _ = size
    # Reads A and B (one byte each) and the scales, writes C in bf16.
    return float(m * k + n * k) + 4.0 * (m + n) + 2.0 * m * n


def flops(size: tuple) -> float:
    m, n, k, _ = size
    return 2.0 * m * n * k


def describe_size(size: tuple) -> str:
    m, n, k, scaling = size
    return f"{m}x{n}x{k}, per-{scaling} scales"
