"""What Act 4's two FlashAttention problems share: softmax(q k^T / sqrt(D)) v for bfloat16 q, k, v of
shape (B, H, S, D), the inputs, the float64 reference a few heads at a time, the traffic of one call
when the scores never leave the chip, and the baseline, which depends on the device: SDPA's flash
backend where it runs.

One notebook, one function ``flash_attention(q, k, v, causal)``, graded as two problems so that each
step earns its own points: ``act4.flash_attention`` on sizes without the causal mask (the tiled online
softmax and the sequence mask) and ``act4.flash_attention_causal`` on sizes with it (the diagonal tile
masked, the tiles above it skipped). A size is ``(B, H, S, D, causal)``; each problem's sizes carry
its own flag, and the speed targets are the same for both (ratios to the flash backend on the same
mask).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ...problem import Baseline
from .. import baselines

HEAD_DIMS = (64, 128)
# The targets are ratios to SDPA's flash backend (FlashAttention-2), measured against it on an H100
# and an H200; the backends after it are what SDPA runs where flash does not (a T4, a build without it).
BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
# How many heads the float64 references compute at a time (a few S x S float64 blocks per head).
_REFERENCE_BYTES = 1 << 30


def bf16_tensors(size: tuple, seed: int, device: str, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """One standard normal (B, H, S, D) bf16 tensor per name, drawn from the seed in that order."""
    b, h, s, d, _ = size
    generator = torch.Generator(device=device).manual_seed(seed)
    return {name: torch.randn(b, h, s, d, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16) for name in names}


def make_inputs(size: tuple, seed: int, device: str) -> dict:
    return {**bf16_tensors(size, seed, device, ("q", "k", "v")), "causal": bool(size[4])}


def head_chunks(heads: int, s: int, blocks: int) -> list[slice]:
    """Slices of the B*H heads small enough that ``blocks`` S x S float64 blocks per head of a slice
    fit in _REFERENCE_BYTES (at least one head per slice)."""
    step = max(1, _REFERENCE_BYTES // (blocks * 8 * s * s))
    return [slice(start, start + step) for start in range(0, heads, step)]


def scores(q: torch.Tensor, k: torch.Tensor, causal: bool, dtype: torch.dtype) -> torch.Tensor:
    """q k^T / sqrt(D) in ``dtype`` for heads q, k of shape (n, S, D); -inf above the diagonal when causal."""
    s, d = q.shape[-2:]
    x = torch.matmul(q.to(dtype), k.to(dtype).transpose(-1, -2)) / math.sqrt(d)
    if causal:
        x.masked_fill_(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return x


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) v in float64 from the bf16 inputs, a few heads at a time."""
    b, h, s, d = q.shape
    q2, k2, v2 = (t.reshape(b * h, s, d) for t in (q, k, v))
    out = torch.empty(b * h, s, d, dtype=torch.float64, device=q.device)
    for chunk in head_chunks(b * h, s, 3):
        out[chunk] = torch.matmul(torch.softmax(scores(q2[chunk], k2[chunk], causal, torch.float64), dim=-1), v2[chunk].double())
    return out.reshape(b, h, s, d)


def baseline_for_problem(name: str) -> Callable[..., Baseline]:
    """The ``baseline(device)`` of the problem ``name``: graded on that problem's own speed scale."""

    def baseline(device) -> Baseline:
        """What the attention speed grade is measured against on ``device``: SDPA's flash backend where
        it runs, graded (on the spec's speed scale); elsewhere the SDPA backend that does run, labelled
        as such and not graded, since no ratio between it and the flash backend has been measured to
        scale the targets by. cuDNN's attention is timed beside it wherever it runs."""
        from ...registry import get

        backend = baselines.first_sdpa_backend(device, BACKENDS, HEAD_DIMS)
        on_gpu = baselines.device_key(device).startswith("cuda")
        runs = on_gpu and baselines.sdpa_runs("CUDNN_ATTENTION", device, HEAD_DIMS)
        extras = (("cuDNN attention", baselines.sdpa("CUDNN_ATTENTION")),) if runs else ()
        label = baselines.SDPA_LABELS[backend]
        if backend == "FLASH_ATTENTION":
            return Baseline(label=label, run=baselines.sdpa(backend), speed_scale=get(name).speed_scale, extra_libraries=extras)
        note = (
            f"SDPA's flash backend does not run on {baselines.describe_device(device)} (it needs compute capability 8.0 or newer "
            f"and a build with it), so the baseline is the {label}. The speed targets are ratios to the flash backend; "
            "your ratio to this one is shown, not graded."
        )
        return Baseline(label=f"{label} (no flash backend here)", run=baselines.sdpa(backend), speed_scale=None, note=note, extra_libraries=extras)

    return baseline


def library_for(baseline: Callable[..., Baseline]) -> Callable[..., torch.Tensor]:
    """The ``library`` that runs what ``baseline`` picks for the inputs' device."""

    def library(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        """The backend ``baseline`` picks for the inputs' device: SDPA's FlashAttention-2 backend (on a
        CPU, its CPU flash kernel) where it runs."""
        return baseline(q.device).run(q, k, v, causal)

    return library


def score_matmul_flops(size: tuple, matmuls: int) -> float:
    """FLOPs of ``matmuls`` products of 2*S*S*D each per head (one operand or the result S x S);
    a causal mask skips the half above the diagonal."""
    b, h, s, d, causal = size
    full = 2.0 * matmuls * b * h * s * s * d
    return full / 2 if causal else full


def flops(size: tuple) -> float:
    # Two matmuls: Q K^T and P V.
    return score_matmul_flops(size, 2)


def bytes_moved(size: tuple) -> float:
    b, h, s, d, _ = size
    # Read Q, K, V and write O once, in bf16: the traffic when the scores never leave the chip.
    return 4.0 * b * h * s * d * 2


def describe_size(size: tuple) -> str:
    b, h, s, d, causal = size
    return f"B={b} H={h} S={s} D={d}" + (" causal" if causal else "")
