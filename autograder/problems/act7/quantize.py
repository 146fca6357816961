"""Act 7's quantisation maths, graded on any machine: int8 per-channel symmetric quantisation, int4
group-wise asymmetric quantisation with two values packed per byte, and their inverses.

The formats, as the exercise states them (``solutions/act7-quantization/quantize.ipynb``):

- **int8, per output channel, symmetric.** For each row ``n`` of ``w`` (N x K, float32):
  ``scale[n] = max|w[n, :]| / 127`` (1.0 for a row of zeros), ``q = clamp(round(w / scale), -127, 127)``
  as int8; ``w ~ q * scale``.
- **int4, per group of ``group_size`` along K, asymmetric.** For each group: ``lo = min(min(w), 0)``,
  ``hi = max(max(w), 0)`` (the range always holds 0, so 0 is stored exactly), ``scale = (hi - lo) / 15``
  (1.0 where hi == lo), ``zero = clamp(round(-lo / scale), 0, 15)``, ``q = clamp(round(w / scale) + zero, 0, 15)``;
  ``w ~ (q - zero) * scale``.
- **Packing.** Two 4-bit values per byte along K: byte ``j`` of a row holds element ``2j`` in its low
  nibble (bits 0-3) and element ``2j + 1`` in its high nibble (bits 4-7):
  ``packed = q[:, 0::2] | (q[:, 1::2] << 4)``, a uint8 tensor of N x K/2.

Rounding is to nearest, so a value comes back within half a step of where it was: for int8
``|w - q * scale| <= scale / 2`` and for int4 ``|w - (q - zero) * scale| <= scale / 2``, since
every value of a group lies in ``[lo, hi]``, which the 16 levels cover. Float32 adds its own
rounding on top (``w / scale`` is rounded, and so is ``scale`` itself): the bounds below allow
4 units of 2^-24 of ``|w|`` and of the levels' span for it, far below the half step a wrong scale, a
truncation instead of rounding or a swapped nibble costs. Packing is integer work and must be bit-exact.
"""

from __future__ import annotations

import random
from typing import Any

import torch

# float32's unit roundoff: every float32 operation is exact to within this much of its result.
U32 = 2.0**-24
INT8_MAX = 127
INT4_LEVELS = 15


# --- the references ----------------------------------------------------------------------------------


def quantize_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    absmax = w.abs().amax(dim=1)
    scale = torch.where(absmax > 0, absmax / INT8_MAX, torch.ones_like(absmax))
    q = torch.clamp(torch.round(w / scale[:, None]), -INT8_MAX, INT8_MAX).to(torch.int8)
    return q, scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.to(torch.float32) * scale[:, None]


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    return q[:, 0::2] | (q[:, 1::2] << 4)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """The inverse of ``pack_int4``: uint8 values 0..15, N x 2*(K/2)."""
    out = torch.empty(packed.shape[0], packed.shape[1] * 2, dtype=torch.uint8, device=packed.device)
    out[:, 0::2] = packed & 0xF
    out[:, 1::2] = packed >> 4
    return out


def int4_ranges(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group, the range the 16 levels cover: (lo, hi) with lo <= 0 <= hi, N x K/group_size each."""
    n, k = w.shape
    groups = w.reshape(n, k // group_size, group_size)
    return groups.amin(dim=2).clamp(max=0), groups.amax(dim=2).clamp(min=0)


def quantize_int4(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n, k = w.shape
    lo, hi = int4_ranges(w, group_size)
    scale = (hi - lo) / INT4_LEVELS
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    zero = torch.clamp(torch.round(-lo / scale), 0, INT4_LEVELS)
    groups = w.reshape(n, k // group_size, group_size)
    q = torch.clamp(torch.round(groups / scale[..., None]) + zero[..., None], 0, INT4_LEVELS)
    return pack_int4(q.to(torch.uint8).reshape(n, k)), scale, zero.to(torch.uint8)


def dequantize_int4(packed: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, group_size: int) -> torch.Tensor:
    q = unpack_int4(packed).to(torch.float32)
    return (q - zero.to(torch.float32).repeat_interleave(group_size, dim=1)) * scale.repeat_interleave(group_size, dim=1)


# --- the judges: what a right answer must satisfy ------------------------------------------------------


class Wrong(Exception):
    """What is wrong with an answer, as the report says it."""


def _tensor(value: Any, what: str, dtype: torch.dtype, shape: tuple) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise Wrong(f"{what} is a {type(value).__name__}, expected a torch tensor")
    if value.dtype != dtype:
        raise Wrong(f"{what} has dtype {str(value.dtype).removeprefix('torch.')}, expected {str(dtype).removeprefix('torch.')}")
    if tuple(value.shape) != tuple(shape):
        raise Wrong(f"{what} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    return value


def _parts(got: Any, names: tuple[str, ...]) -> tuple:
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        raise Wrong(f"the answer is a {type(got).__name__}, expected a tuple of {len(names)} tensors ({', '.join(names)})")
    return tuple(got)


def _first_bad(ok: torch.Tensor, describe) -> str:
    bad = (~ok).nonzero()
    shown = "; ".join(describe(tuple(int(i) for i in index)) for index in bad[:3])
    return f"{len(bad)} of {ok.numel()} values: {shown}"


def _judge_scale(scale: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    # Two float32 roundings on each side of the formula (a reduction is exact, the division is not):
    # 4 units of 2^-24 cover any honest order of operations; 127 for 128, or a missing zero row, do not.
    ok = (scale.double() - expected.double()).abs() <= 4 * U32 * expected.double().abs()
    if not bool(ok.all()):
        raise Wrong(f"{what} is off the format's scale in " + _first_bad(ok, lambda i: f"{what}{list(i)} is {float(scale[i]):.8g}, expected {float(expected[i]):.8g}"))


def judge_quantize_int8(got: Any, expected: Any, case: dict) -> str | None:
    w = case["w"]
    try:
        q, scale = _parts(got, ("q", "scale"))
        q = _tensor(q, "q", torch.int8, w.shape)
        scale = _tensor(scale, "scale", torch.float32, (w.shape[0],))
        _judge_scale(scale, expected[1], "scale")
        if bool((q == -128).any()):
            raise Wrong("q holds -128: the symmetric format uses -127..127, so that q and -q both exist")
        error = (w.double() - q.double() * scale.double()[:, None]).abs()
        allowed = 0.5 * scale.double()[:, None] + 4 * U32 * w.double().abs()
        ok = error <= allowed
        if not bool(ok.all()):
            raise Wrong(
                "the round trip q * scale is more than half a step from w (round to nearest, do not truncate) in "
                + _first_bad(ok, lambda i: f"w{list(i)} = {float(w[i]):.6g} came back as {float(q[i]) * float(scale[i[0]]):.6g} (q = {int(q[i])})")
            )
    except Wrong as wrong:
        return str(wrong)
    return None


def _judge_floats(out: Any, reference: torch.Tensor, allowed: torch.Tensor, what: str) -> None:
    out = _tensor(out, what, torch.float32, reference.shape)
    error = (out.double() - reference).abs()
    ok = error <= allowed
    ok &= torch.isfinite(out)
    if not bool(ok.all()):
        raise Wrong("wrong values in " + _first_bad(ok, lambda i: f"{what}{list(i)} is {float(out[i]):.8g}, expected {float(reference[i]):.8g}"))


def judge_dequantize_int8(got: Any, expected: Any, case: dict) -> str | None:
    exact = case["q"].double() * case["scale"].double()[:, None]
    try:
        # One product, rounded once to float32.
        _judge_floats(got, exact, 2 * U32 * exact.abs(), "w")
    except Wrong as wrong:
        return str(wrong)
    return None


def judge_pack_int4(got: Any, expected: Any, case: dict) -> str | None:
    q = case["q"]
    try:
        packed = _tensor(got, "packed", torch.uint8, expected.shape)
        ok = packed == expected
        if not bool(ok.all()):
            swapped = bool(torch.equal(((packed & 0xF) << 4) | (packed >> 4), expected))
            hint = " (the nibbles are swapped: element 2j goes in the low 4 bits, element 2j+1 in the high 4)" if swapped else ""
            raise Wrong(
                "packed bytes differ" + hint + " in "
                + _first_bad(ok, lambda i: f"byte {list(i)} is 0x{int(packed[i]):02x}, expected 0x{int(expected[i]):02x} (from q = {int(q[i[0], 2 * i[1]])}, {int(q[i[0], 2 * i[1] + 1])})")
            )
    except Wrong as wrong:
        return str(wrong)
    return None


def int4_round_trip_allowed(w: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    """Half a step, plus float32's rounding of w / scale and of the scale (4 units of 2^-24 of |w| and
    of the 16 levels' span), per element of w."""
    step = scale.double().repeat_interleave(group_size, dim=1)
    return 0.5 * step + 4 * U32 * (w.double().abs() + (INT4_LEVELS + 1) * step)


def judge_quantize_int4(got: Any, expected: Any, case: dict) -> str | None:
    w, group_size = case["w"], case["group_size"]
    n, k = w.shape
    groups = (n, k // group_size)
    try:
        packed, scale, zero = _parts(got, ("packed", "scale", "zero"))
        packed = _tensor(packed, "packed", torch.uint8, (n, k // 2))
        scale = _tensor(scale, "scale", torch.float32, groups)
        zero = _tensor(zero, "zero", torch.uint8, groups)
        _judge_scale(scale, expected[1], "scale")
        # zero is the nearest level to -lo / scale, which lies in [0, 15]: either neighbour of a tie.
        lo, _ = int4_ranges(w, group_size)
        exact_zero = -lo.double() / expected[1].double()
        ok = ((zero.double() - exact_zero).abs() <= 0.5 + 1e-4) & (zero <= INT4_LEVELS)
        if not bool(ok.all()):
            raise Wrong("zero is not round(-lo / scale) with lo = min(group min, 0) in " + _first_bad(ok, lambda i: f"zero{list(i)} is {int(zero[i])}, expected {int(expected[2][i])}"))
        allowed = int4_round_trip_allowed(w, scale, group_size)

        def error_of(p: torch.Tensor) -> torch.Tensor:
            q = unpack_int4(p).double()
            return (w.double() - (q - zero.double().repeat_interleave(group_size, dim=1)) * scale.double().repeat_interleave(group_size, dim=1)).abs()

        ok = error_of(packed) <= allowed
        if not bool(ok.all()):
            swapped = ((packed & 0xF) << 4) | (packed >> 4)
            hint = " Your nibbles are swapped: element 2j goes in the low 4 bits of byte j, element 2j+1 in the high 4." if bool((error_of(swapped) <= allowed).all()) else ""
            unpacked = unpack_int4(packed)
            raise Wrong(
                "the round trip (q - zero) * scale is more than half a step from w in "
                + _first_bad(ok, lambda i: f"w{list(i)} = {float(w[i]):.6g} came back with q = {int(unpacked[i])}")
                + "." + hint
            )
    except Wrong as wrong:
        return str(wrong)
    return None


def judge_dequantize_int4(got: Any, expected: Any, case: dict) -> str | None:
    group_size = case["group_size"]
    q = unpack_int4(case["packed"]).double()
    step = case["scale"].double().repeat_interleave(group_size, dim=1)
    exact = (q - case["zero"].double().repeat_interleave(group_size, dim=1)) * step
    try:
        # (q - zero) is a small integer, so (q - zero) * scale is one rounding; q*scale - zero*scale is
        # three, each of at most 15 steps: 64 units of 2^-24 of a step cover both, a wrong level does not.
        _judge_floats(got, exact, 2 * U32 * exact.abs() + 64 * U32 * step, "w")
    except Wrong as wrong:
        return str(wrong)
    return None


# --- the cases ----------------------------------------------------------------------------------------


def _weights(generator: torch.Generator, n: int, k: int, outliers: int = 0) -> torch.Tensor:
    """Weights as a trained layer has them: about N(0, 0.02), with a few channels of outliers 20-50x larger."""
    w = 0.02 * torch.randn(n, k, generator=generator)
    for _ in range(outliers):
        row = int(torch.randint(0, n, (1,), generator=generator))
        col = int(torch.randint(0, k, (1,), generator=generator))
        w[row, col] = float(torch.empty(1).uniform_(0.4, 1.0, generator=generator)) * (1 if col % 2 else -1)
    return w


def int8_cases(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    r = random.Random(seed)
    edge = torch.tensor(
        [
            [0.0, 0.0, 0.0, 0.0, 0.0],  # a row of zeros: scale 1.0, q all 0
            [-2.0, 1.0, 0.5, -0.25, 2.0],  # the largest magnitude twice, with both signs: q = -127 and 127
            [-3.0, 0.1, 0.2, 0.3, 0.4],  # the largest magnitude is negative
            [1e-30, -1e-30, 0.0, 5e-31, 1e-30],  # tiny values: the scale is tiny, not zero
        ]
    )
    cases = [{"w": torch.tensor([[0.7]])}, {"w": edge}, {"w": _weights(generator, 3, 257, outliers=2)}]
    for _ in range(3):
        cases.append({"w": _weights(generator, r.randrange(1, 70), r.randrange(1, 1100), outliers=r.randrange(0, 8))})
    return cases


def dequantize_int8_cases(seed: int) -> list[dict]:
    return [dict(zip(("q", "scale"), quantize_int8(case["w"]), strict=True)) for case in int8_cases(seed)]


def pack_cases(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    r = random.Random(seed)
    every_pair = torch.arange(256, dtype=torch.int32)
    cases = [
        # Every byte value once: each (low, high) pair of nibbles.
        {"q": torch.stack([every_pair & 0xF, every_pair >> 4], dim=1).reshape(1, 512).to(torch.uint8)},
        {"q": torch.tensor([[15, 0], [0, 15]], dtype=torch.uint8)},
    ]
    for _ in range(4):
        cases.append({"q": torch.randint(0, 16, (r.randrange(1, 40), 2 * r.randrange(1, 300)), generator=generator, dtype=torch.uint8)})
    return cases


def int4_cases(seed: int) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    r = random.Random(seed)
    edge = torch.zeros(5, 64)
    edge[1] = torch.linspace(0.1, 3.0, 64)  # all positive: lo is 0, zero is 0
    edge[2] = -torch.linspace(0.1, 3.0, 64)  # all negative: hi is 0, zero is 15
    edge[3] = 0.25  # one value: the range is [0, 0.25]
    edge[4, :32] = _weights(generator, 1, 32)[0]
    edge[4, 7] = 8.0  # one outlier stretches its group's step
    cases = [{"w": edge, "group_size": 32}, {"w": _weights(generator, 1, 128), "group_size": 128}]
    for group_size in (32, 64, 128):
        groups = r.randrange(1, 5)
        cases.append({"w": _weights(generator, r.randrange(1, 50), group_size * groups, outliers=r.randrange(0, 6)), "group_size": group_size})
    cases.append({"w": _weights(generator, r.randrange(1, 20), 128 * r.randrange(1, 4), outliers=3), "group_size": 128})
    return cases


def dequantize_int4_cases(seed: int) -> list[dict]:
    out = []
    for case in int4_cases(seed):
        packed, scale, zero = quantize_int4(case["w"], case["group_size"])
        out.append({"packed": packed, "scale": scale, "zero": zero, "group_size": case["group_size"]})
    return out
