"""out = x @ W^T where W (N x K) is stored in int4: two 4-bit values per byte (element 2j of a row
in the low nibble of byte j, element 2j+1 in the high nibble, as Act 7's quantise exercise packs
them), with one bf16 scale and one uint8 zero point per group of 128 consecutive elements of a row:
W[n, k] = (q[n, k] - zero[n, k // 128]) * scale[n, k // 128]. x is bf16 (batch x K), so is out.

Decoding a token reads every weight once: at batch 1 the work is a matrix-vector product whose time
is the weights' bytes over the memory bandwidth, and 4.19 bits per weight (4 + 24 bits of scale and
zero per 128) instead of 16 is the whole point. The learner is never given W in bf16: only the
packed bytes, the scales and the zeros.
"""

from __future__ import annotations

import torch

from ....problem import Baseline

NAME = "act7.int4_gemv"
GROUP = 128
# Scales of about 0.01 give weights of a trained layer's size (|W| up to 0.15 or so).
SCALE = 0.01


def make_inputs(size: tuple, seed: int, device: str) -> dict:
    batch, n, k = size
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(batch, k, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)
    q = torch.randint(0, 16, (n, k), generator=generator, device=device, dtype=torch.uint8)
    w_packed = q[:, 0::2] | (q[:, 1::2] << 4)
    # Every group its own scale and zero: a kernel that applies one per row, or none, is wrong.
    scale = (SCALE * (0.5 + torch.rand(n, k // GROUP, generator=generator, device=device))).to(torch.bfloat16)
    zero = torch.randint(0, 16, (n, k // GROUP), generator=generator, device=device, dtype=torch.uint8)
    return {"x": x, "w_packed": w_packed, "scale": scale, "zero": zero}


def unpack(w_packed: torch.Tensor) -> torch.Tensor:
    """The 4-bit values, N x K, as uint8."""
    q = torch.empty(w_packed.shape[0], 2 * w_packed.shape[1], dtype=torch.uint8, device=w_packed.device)
    q[:, 0::2] = w_packed & 0xF
    q[:, 1::2] = w_packed >> 4
    return q


def dequantize(w_packed: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """W in ``dtype``, computed in float64 (exact: a 4-bit integer times a bf16 scale) and rounded once."""
    q = unpack(w_packed).double()
    per_element = (q - zero.double().repeat_interleave(GROUP, dim=1)) * scale.double().repeat_interleave(GROUP, dim=1)
    return per_element.to(dtype)


def reference(x: torch.Tensor, w_packed: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    return x.double() @ dequantize(w_packed, scale, zero, torch.float64).t()


def library(x: torch.Tensor, w_packed: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """What a bf16 model computes: the weights in bf16 (each rounded once), then cuBLAS."""
    return torch.matmul(x, dequantize(w_packed, scale, zero, torch.bfloat16).t())


_DENSE: dict = {}


def _dense_weights(n: int, k: int, device) -> list[torch.Tensor]:
    """bf16 N x K weights for the baseline, made once per shape and device in the trusted helper:
    enough of them to hold three times the GPU's L2 cache, so that the calls of a timed window, each
    on the next weight, read theirs from memory as the learner's calls on fresh inputs do."""
    key = (n, k, str(device))
    if key not in _DENSE:
        generator = torch.Generator(device=device).manual_seed(n * 1_000_003 + k)
        l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size if torch.device(device).type == "cuda" else 0
        count = max(2, -(-3 * l2_bytes // (2 * n * k)))
        _DENSE[key] = [[(SCALE * torch.randn(n, k, generator=generator, device=device)).to(torch.bfloat16) for _ in range(count)], 0]
    return _DENSE[key]


def dense_gemv(x: torch.Tensor, w_packed: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """The speed baseline: the same product with a bf16 weight of the same shape, one cuBLAS call
    (a GEMV at batch 1). Timing ``library`` instead would charge cuBLAS for dequantising W first.
    Each call takes the next of several weights: one weight read again and again would sit in L2
    (32 MB at 4096 x 4096, within an H100's 50 MB) while the learner's packed weights never do."""
    n, k = w_packed.shape[0], 2 * w_packed.shape[1]
    entry = _dense_weights(n, k, x.device)
    weights, turn = entry
    entry[1] = (turn + 1) % len(weights)
    return torch.matmul(x, weights[turn].t())


def baseline(device) -> Baseline:
    from ....registry import get

    return Baseline(label="bf16 cuBLAS GEMV (torch.matmul, bf16 weights of the same shape)", run=dense_gemv, speed_scale=get(NAME).speed_scale)


def bytes_moved(size: tuple) -> float:
    batch, n, k = size
    groups = n * (k // GROUP)
    # Reads the packed weights (half a byte each), a bf16 scale and a uint8 zero per group, and x;
    # writes out.
    return n * k / 2 + 3.0 * groups + 2.0 * batch * k + 2.0 * batch * n


def flops(size: tuple) -> float:
    batch, n, k = size
    return 2.0 * batch * n * k


def describe_size(size: tuple) -> str:
    batch, n, k = size
    return f"batch {batch}, N={n} K={k}"
