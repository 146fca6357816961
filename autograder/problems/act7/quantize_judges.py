"""What a right answer to Act 7's quantisation exercises must satisfy (the formats are quantize.py's),
each judge returning None or the sentence the report shows.

Rounding is to nearest, so a value comes back within half a step of where it was: for int8
``|w - q * scale| <= scale / 2`` and for int4 ``|w - (q - zero) * scale| <= scale / 2``, since
every value of a group lies in ``[lo, hi]``, which the 16 levels cover. Float32 adds its own
rounding on top (``w / scale`` is rounded, and so is ``scale`` itself): the bounds below allow
4 units of 2^-24 of ``|w|`` and of the levels' span for it, far below the half step a wrong scale, a
truncation instead of rounding or a swapped nibble costs. Packing is integer work and must be bit-exact.
"""

from __future__ import annotations

from typing import Any

import torch

from .quantize import INT4_LEVELS, int4_ranges, unpack_int4

# float32's unit roundoff: every float32 operation is exact to within this much of its result.
U32 = 2.0**-24


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
