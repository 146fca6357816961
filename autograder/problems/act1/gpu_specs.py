"""Act 1.5's answers: a GPU's peak rates, ridge points and time bounds read from its spec table, the
spec table of five generations, and the random GPUs the cases draw after them. Shared by the
act's three exact problems (peak_rates, ridge_points, time_bounds)."""

from __future__ import annotations

import random

# Spec-sheet inputs for five generations, in the units a spec table uses. FLOP per clock per SM is
# dense (no structured sparsity) and counts a fused multiply-add as 2 FLOPs; each value reproduces
# the vendor's datasheet peak at the clock given (see the book's generations page for the sources).
# These fixed cases are the exercise's edge cases; random GPUs drawn from the seed follow them.
SPEC_TABLE = {
    "T4": dict(sms=40, clock_ghz=1.59, flops_per_clock_per_sm={"fp32": 128, "fp16": 1024, "int8": 2048}, bus_width_bits=256, data_rate_gbps=10.0),
    "A100": dict(sms=108, clock_ghz=1.41, flops_per_clock_per_sm={"fp32": 128, "tf32": 1024, "bf16": 2048, "fp16": 2048, "int8": 4096}, bus_width_bits=5120, data_rate_gbps=2.43),
    "H100": dict(sms=132, clock_ghz=1.83, flops_per_clock_per_sm={"tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192}, bus_width_bits=5120, data_rate_gbps=5.234),
    "H200": dict(sms=132, clock_ghz=1.83, flops_per_clock_per_sm={"tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192}, bus_width_bits=6144, data_rate_gbps=6.25),
    "B200": dict(sms=148, clock_ghz=1.856, flops_per_clock_per_sm={"bf16": 8192, "fp8": 16384, "fp4": 32768}, bus_width_bits=8192, data_rate_gbps=7.8125),
}
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


def peak_rates(sms: int, clock_ghz: float, flops_per_clock_per_sm: dict, bus_width_bits: int, data_rate_gbps: float) -> dict:
    """Peak arithmetic per dtype in FLOP/s (every SM busy every clock) and peak memory bandwidth in
    bytes/s (every pin of the bus moving data_rate_gbps gigabits per second)."""
    flops = {dtype: sms * per_sm * clock_ghz * 1e9 for dtype, per_sm in flops_per_clock_per_sm.items()}
    return {"flops": flops, "bandwidth": bus_width_bits / 8 * data_rate_gbps * 1e9}


def ridge_points(sms: int, clock_ghz: float, flops_per_clock_per_sm: dict, bus_width_bits: int, data_rate_gbps: float) -> dict:
    """Per dtype, the arithmetic intensity (FLOP per byte) at which the chip turns compute-bound."""
    peaks = peak_rates(sms, clock_ghz, flops_per_clock_per_sm, bus_width_bits, data_rate_gbps)
    return {dtype: rate / peaks["bandwidth"] for dtype, rate in peaks["flops"].items()}


def time_bounds(flops: float, bytes_moved: float, dtype: str, gpus: dict) -> dict:
    """For each GPU of a spec table (name -> spec), the least time an operation can take and what
    bounds it there: {"seconds": max(flops / peak, bytes / bandwidth), "bound": "compute" when the
    operation's intensity is at or above that GPU's ridge point for the dtype, else "memory"}."""
    out = {}
    for name, spec in gpus.items():
        peaks = peak_rates(**spec)
        peak = peaks["flops"][dtype]
        compute_s, memory_s = flops / peak, bytes_moved / peaks["bandwidth"]
        out[name] = {"seconds": max(compute_s, memory_s), "bound": "compute" if flops / bytes_moved >= peak / peaks["bandwidth"] else "memory"}
    return out


def random_gpu(r: random.Random) -> dict:
    dtypes = r.sample(DTYPES, r.randrange(1, 5))
    return dict(
        sms=r.randrange(8, 200),
        clock_ghz=round(r.uniform(0.8, 2.2), 3),
        flops_per_clock_per_sm={d: r.choice((64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)) for d in dtypes},
        bus_width_bits=r.choice((128, 192, 256, 384, 4096, 5120, 6144, 8192)),
        data_rate_gbps=round(r.uniform(1.0, 24.0), 3),
    )


def spec_cases(seed: int) -> list:
    r = random.Random(seed)
    fixed = [dict(spec) for spec in SPEC_TABLE.values()]
    # One SM, one clock, one dtype: the formulas with nothing to hide behind.
    fixed.append(dict(sms=1, clock_ghz=1.0, flops_per_clock_per_sm={"fp32": 2}, bus_width_bits=8, data_rate_gbps=1.0))
    return fixed + [random_gpu(r) for _ in range(6)]
