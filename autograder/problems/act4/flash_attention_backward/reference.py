"""FlashAttention's backward pass: dQ, dK and dV of O = softmax(q k^T / sqrt(D)) v for bfloat16 q, k,
v and the incoming gradient do of shape (B, H, S, D), given what the forward pass saved (O in bf16
and L = m + log l per query row in float32), stacked in one (3, B, H, S, D) bf16 output.

The inputs, the scores and the chunking of the float64 work are the forward's
(autograder/problems/act4/attention.py); the baseline is the backward of the same SDPA backend that
baseline is, called on its own so that only the backward is timed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from ....problem import Baseline
from ... import baselines
from .. import attention
from ..attention import HEAD_DIMS, describe_size

__all__ = ["make_inputs", "reference", "library", "baseline", "bytes_moved", "flops", "describe_size", "HEAD_DIMS"]

NAME = "act4.flash_attention_backward"


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """What a FlashAttention forward pass saves for the backward: O in bf16 and the logsumexp of each
    query row of the scaled scores, L = m + log l (natural log), in float32, both computed in float32
    (TF32 off) from the bf16 inputs, as the forward kernel's registers hold them."""
    b, h, s, d = q.shape
    q2, k2, v2 = (t.reshape(b * h, s, d) for t in (q, k, v))
    o = torch.empty(b * h, s, d, dtype=torch.bfloat16, device=q.device)
    lse = torch.empty(b * h, s, dtype=torch.float32, device=q.device)
    with baselines.ieee_fp32_matmul():
        # float32 blocks are half the size of float64 ones: the scores and their exponentials fit in two.
        for chunk in attention.head_chunks(b * h, s, 2):
            x = attention.scores(q2[chunk], k2[chunk], causal, torch.float32)
            lse[chunk] = torch.logsumexp(x, dim=-1)
            o[chunk] = torch.matmul(torch.exp(x - lse[chunk, :, None]), v2[chunk].float()).to(torch.bfloat16)
    return o.reshape(b, h, s, d), lse.reshape(b, h, s)


def make_inputs(size: tuple, seed: int, device: str) -> dict:
    """q, k, v and do standard normal in bf16 (q, k and v are the forward's for the same seed), then
    the forward's saved O and L for them: the arguments in the order of the learner's function."""
    drawn = attention.bf16_tensors(size, seed, device, ("q", "k", "v", "do"))
    causal = bool(size[4])
    o, lse = forward(drawn["q"], drawn["k"], drawn["v"], causal)
    return {"q": drawn["q"], "k": drawn["k"], "v": drawn["v"], "o": o, "lse": lse, "do": drawn["do"], "causal": causal}


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, do: torch.Tensor, causal: bool) -> torch.Tensor:
    """(dQ, dK, dV) in float64, from the math of the bf16 q, k, v and do alone: P recomputed exactly,
    dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)), dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D).
    o and lse are not used: the exact gradient does not depend on them, and their rounding (O in bf16)
    is an error the library makes too, so the tolerance derived from it allows for it."""
    b, h, s, d = q.shape
    q2, k2, v2, do2 = (t.reshape(b * h, s, d) for t in (q, k, v, do))
    out = torch.empty(3, b * h, s, d, dtype=torch.float64, device=q.device)
    # P, dP and dS, and a temporary, per head.
    for chunk in attention.head_chunks(b * h, s, 4):
        qc, kc, vc, dc = (t[chunk].double() for t in (q2, k2, v2, do2))
        p = torch.softmax(attention.scores(qc, kc, causal, torch.float64), dim=-1)
        dp = torch.matmul(dc, vc.transpose(-1, -2))
        # rowsum(P * dP) equals rowsum(dO * O) in exact arithmetic: the D_i of the kernel.
        ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True))
        del dp
        out[0, chunk] = torch.matmul(ds, kc) / math.sqrt(d)
        out[1, chunk] = torch.matmul(ds.transpose(-1, -2), qc) / math.sqrt(d)
        out[2, chunk] = torch.matmul(p.transpose(-1, -2), dc)
    return out.reshape(3, b, h, s, d)


# Without dropout the backends never read the seed and offset: an empty scalar stands in for them, as
# the flash forward returns one when it does not drop out.
_UNUSED_RNG = torch.empty((), dtype=torch.long)


def flash_backward(q, k, v, o, lse, do, causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SDPA's flash backend's backward operator alone, on the saved O and L: no forward pass, no
    autograd graph. Its forward saves L as (B, H, S) float32 natural-log logsumexps, as given here;
    the cumulative lengths are None (dense batches, not packed sequences)."""
    s = q.shape[2]
    if q.is_cuda:
        return torch.ops.aten._scaled_dot_product_flash_attention_backward(do, q, k, v, o, lse, None, None, s, s, 0.0, causal, _UNUSED_RNG, _UNUSED_RNG)
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(do, q, k, v, o, lse, 0.0, causal)


def cudnn_backward(q, k, v, o, lse, do, causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """cuDNN's attention backward alone, on the same saved O and L; its forward saves L as (B, H, S, 1).
    Unlike the flash operator it checks that its random-number tensors are on the inputs' device,
    unused at dropout 0 or not (tests/gpu/probe_cudnn_backward.py)."""
    s = q.shape[2]
    rng = _UNUSED_RNG.to(q.device)
    return torch.ops.aten._scaled_dot_product_cudnn_attention_backward(do, q, k, v, o, lse.unsqueeze(-1), rng, rng, None, None, None, s, s, 0.0, causal)


def autograd_backward(backend: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The gradients by autograd through SDPA's ``backend``: its forward pass runs again first (that
    backend saves its own statistics), so the time includes a forward pass."""

    def run(q, k, v, o, lse, do, causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        with torch.enable_grad():
            out = baselines.sdpa(backend)(*leaves, causal)
        return torch.autograd.grad(out, leaves, do)

    return run


@functools.cache
def _runs(backward: Callable, device: str) -> bool:
    """Whether ``backward`` runs on ``device`` for both head dims, with and without the mask, tried
    once on tiny inputs, as baselines.sdpa_runs decides a forward backend."""
    try:
        for d in HEAD_DIMS:
            for causal in (False, True):
                backward(**make_inputs((1, 1, 16, d, causal), 0, device))
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        return True
    # A backend's refusal is a RuntimeError; an operator whose signature changed between PyTorch
    # versions refuses its arguments with a TypeError or ValueError: either way, it does not run here.
    except (RuntimeError, TypeError, ValueError):
        return False


def dq_only(backward: Callable) -> Callable[..., torch.Tensor]:
    """What the helper times: ``backward``, all three gradients computed, and only dQ handed back.

    A timed call returns one tensor, and stacking the three (a copy of the whole output) would charge
    the library for work the learner's kernels avoid by writing one (3, B, H, S, D) tensor in place;
    the worker waits for all of the call's GPU work, dK and dV included, before the window closes."""

    def run(q, k, v, o, lse, do, causal: bool) -> torch.Tensor:
        return backward(q, k, v, o, lse, do, causal)[0]

    return run


def backward_for(device) -> tuple[str, Callable, bool]:
    """(label, gradients, graded) of the backward that runs on ``device``: the flash backend's
    backward where it runs, graded; elsewhere autograd through the SDPA backend the forward's baseline
    falls back to, labelled as such and not graded."""
    key = baselines.device_key(device)
    if baselines.first_sdpa_backend(key, attention.BACKENDS, HEAD_DIMS) == "FLASH_ATTENTION" and _runs(flash_backward, key):
        return "SDPA flash backward", flash_backward, True
    backend = baselines.first_sdpa_backend(key, attention.BACKENDS[1:], HEAD_DIMS)
    return f"{baselines.SDPA_LABELS[backend]}, forward and backward by autograd", autograd_backward(backend), False


def baseline(device) -> Baseline:
    """What the speed grade is measured against on ``device`` (backward_for), with cuDNN's attention
    backward timed beside it wherever it runs."""
    from ....registry import get

    label, backward, graded = backward_for(device)
    key = baselines.device_key(device)
    runs = key.startswith("cuda") and baselines.sdpa_runs("CUDNN_ATTENTION", key, HEAD_DIMS) and _runs(cudnn_backward, key)
    extras = (("cuDNN attention backward", dq_only(cudnn_backward)),) if runs else ()
    if graded:
        return Baseline(label=label, run=dq_only(backward), speed_scale=get(NAME).speed_scale, extra_libraries=extras)
    note = (
        f"SDPA's flash backend does not run on {baselines.describe_device(device)}, so the baseline is the {label} "
        "(its time includes a forward pass). The speed targets are ratios to the flash backward alone; your ratio to this one is shown, not graded."
    )
    return Baseline(label=f"{label} (no flash backend here)", run=dq_only(backward), speed_scale=None, note=note, extra_libraries=extras)


def library(q, k, v, o, lse, do, causal: bool) -> torch.Tensor:
    """The backward backward_for picks for the inputs' device, its three gradients stacked as the
    learner's output is (the stacking is not part of what the helper times: dq_only)."""
    return torch.stack(backward_for(q.device)[1](q, k, v, o, lse, do, causal))


def flops(size: tuple) -> float:
    # Five matmuls: Q K^T again (P is recomputed, not stored), dV = P^T dO, dP = dO V^T, dQ = dS K
    # and dK = dS^T Q; 2.5 times the forward's two. A solution that recomputes more (a separate dQ
    # kernel does Q K^T and dO V^T twice) is charged for the minimum.
    return attention.score_matmul_flops(size, 5)


def bytes_moved(size: tuple) -> float:
    b, h, s, d, _ = size
    # Read Q, K, V, O and dO and write dQ, dK and dV once in bf16, and read L in float32: the traffic
    # when P, dP and dS never leave the chip (D_i = rowsum(dO * O) may be kept on chip too).
    return 8.0 * b * h * s * d * 2 + b * h * s * 4
