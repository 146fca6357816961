"""Act 1: the GPU hierarchy. Three CuPy RawKernel exercises about mapping work onto the chip and
moving bytes well (2-D indexing with edge masks and a row pitch, a tiled transpose, a warp-shuffle
reduction), and 1.5's exact pure-Python exercises that read a GPU's peaks from its spec table.

All three kernels are memory-bound (a fraction of a FLOP per byte), so their speed is graded as a
fraction of this GPU's measured copy bandwidth: full marks at 70%, the reference solutions at 85%.
"""

from __future__ import annotations

import random

import torch

from ..metrics import COPY_FRACTION
from ..problem import ExactProblem, LinearScale, Problem, register

# Memory-bound kernels of Act 1: 0 points at 30% of copy bandwidth, full marks at 70%; the reference
# solutions must reach 85% on an H100/H200.
COPY_FRACTION_SCALE = LinearScale(metric=COPY_FRACTION, zero_at=0.30, full_at=0.70)
SOLUTION_TARGET = 0.85


def _generator(seed: int, device: str) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _host_uniform(seed: int, low: float, high: float) -> float:
    """A scalar drawn from the seed on the host, the same on every device."""
    return float(torch.empty(1).uniform_(low, high, generator=torch.Generator().manual_seed(seed)))


# --- 1. 2-D indexing with edge masks and a row pitch ---------------------------------------------

# (rows, cols, row pitch in elements). A pitch larger than cols means each row of x starts `pitch`
# floats after the previous one: x is a view into a wider buffer, as a column slice or a padded
# allocation gives you. Shapes of one row or one column, primes and 127/129 catch grids that do not
# round up and masks that test the wrong axis.
INDEXING_TEST_SIZES = (
    (1, 1, 1),
    (1, 1, 7),
    (1, 4097, 4097),
    (4097, 1, 1),
    (4097, 1, 5),
    (31, 33, 33),
    (127, 129, 129),
    (129, 127, 160),
    (1823, 781, 781),
    (1823, 781, 800),
    (781, 1823, 1900),
)
# 256 MB and 512 MB of x: far beyond any L2. The second is pitched: 8000 of every 8192 floats.
INDEXING_BENCH_SIZES = ((8192, 8192, 8192), (16384, 8000, 8192))


def _describe_pitched(size) -> str:
    rows, cols, pitch = size
    shape = f"{rows}x{cols}"
    return shape if pitch == cols else f"{shape} (row pitch {pitch})"


def scale_shift_2d_inputs(size, seed: int, device: str) -> dict:
    rows, cols, pitch = size
    g = _generator(seed, device)
    base = torch.randn(rows, pitch, generator=g, device=device, dtype=torch.float32)
    x = base[:, :cols]  # strides (pitch, 1): contiguous rows, a gap after each one when pitch > cols
    row_scale = torch.rand(rows, generator=g, device=device, dtype=torch.float32) * 4.0 - 2.0
    col_shift = torch.randn(cols, generator=g, device=device, dtype=torch.float32)
    return {"x": x, "row_scale": row_scale, "col_shift": col_shift}


def scale_shift_2d_reference(x: torch.Tensor, row_scale: torch.Tensor, col_shift: torch.Tensor) -> torch.Tensor:
    return row_scale.double()[:, None] * x.double() + col_shift.double()[None, :]


def scale_shift_2d_library(x: torch.Tensor, row_scale: torch.Tensor, col_shift: torch.Tensor) -> torch.Tensor:
    # One fused kernel: col_shift + row_scale * x, broadcast over rows and columns.
    return torch.addcmul(col_shift[None, :], row_scale[:, None], x)


def _scale_shift_bytes(size) -> float:
    rows, cols, _ = size
    return 4.0 * (2 * rows * cols + rows + cols)  # read x, write out, read the two vectors once


# --- 2. Transpose ---------------------------------------------------------------------------------

TRANSPOSE_TEST_SIZES = ((1, 1), (1, 4097), (4097, 1), (31, 33), (33, 31), (127, 129), (129, 127), (1823, 781), (781, 1823), (1024, 1024))
# 256 MB and 512 MB: far beyond any L2, and within a 16 GB T4 with room for input, output and a copy.
TRANSPOSE_BENCH_SIZES = ((8192, 8192), (16384, 8192))


def _describe_shape(size) -> str:
    return "x".join(str(d) for d in size)


def transpose_inputs(size, seed: int, device: str) -> dict:
    rows, cols = size
    return {"x": torch.randn(rows, cols, generator=_generator(seed, device), device=device, dtype=torch.float32)}


def transpose_reference(x: torch.Tensor) -> torch.Tensor:
    return x.double().t()


def transpose_library(x: torch.Tensor) -> torch.Tensor:
    # x.t().contiguous(), except that it always copies: for a 1 x n or n x 1 matrix x.t() is already
    # contiguous and .contiguous() would hand back a view of x.
    return x.t().clone(memory_format=torch.contiguous_format)


def _transpose_bytes(size) -> float:
    rows, cols = size
    return 8.0 * rows * cols  # every float read once and written once


# --- 3. Reduction ---------------------------------------------------------------------------------

REDUCTION_TEST_SIZES = (1, 2, 31, 32, 33, 127, 128, 129, 1000, 1023, 1024, 1025, 4097, 65_537, 1_000_003, (1 << 22) + 3)
# 512 MB and 1 GB of float32. A one-pass read of 256 MB (2^26 floats) lasts under 80 us, and on an
# H200 both the reference and cupy.sum spent 14 us more than their 2^28 bandwidth predicts, so at
# that size the fixed cost of a call, not the kernel, decided whether 85% of copy was reached.
REDUCTION_BENCH_SIZES = (1 << 27, 1 << 28)


def reduce_sum_inputs(n: int, seed: int, device: str) -> dict:
    # A mean drawn from the seed, away from zero and of either sign, so the sum grows with n and is
    # never close to zero: a relative tolerance means something, and another seed's sum is far off.
    mean = _host_uniform(seed, 0.25, 1.0) * (1.0 if seed % 2 else -1.0)
    x = torch.randn(n, generator=_generator(seed, device), device=device, dtype=torch.float32)
    return {"x": x.add_(mean)}


def reduce_sum_reference(x: torch.Tensor) -> torch.Tensor:
    return x.double().sum()


def reduce_sum_library(x: torch.Tensor) -> torch.Tensor:
    """cupy.sum on the GPU (CUB's device-wide reduction, float32 accumulation), returned as a 0-d
    torch tensor through DLPack. Without a GPU (the problem is never graded there, but its checks
    are tested) torch.sum stands in."""
    if not x.is_cuda:
        return x.sum()
    import cupy

    return torch.from_dlpack(cupy.sum(cupy.from_dlpack(x)))


register(
    Problem(
        name="act1.indexing_2d",
        title="2-D indexing with edge masks and a row pitch (CuPy RawKernel)",
        notebook="act1-hierarchy/indexing_2d",
        function="scale_shift_2d",
        language="cupy",
        make_inputs=scale_shift_2d_inputs,
        reference=scale_shift_2d_reference,
        library=scale_shift_2d_library,
        library_name="torch.addcmul",
        bytes_moved=_scale_shift_bytes,
        flops=lambda size: 2.0 * size[0] * size[1],
        test_sizes=INDEXING_TEST_SIZES,
        bench_sizes=INDEXING_BENCH_SIZES,
        speed_scale=COPY_FRACTION_SCALE,
        solution_target=SOLUTION_TARGET,
        describe_size=_describe_pitched,
    )
)

register(
    Problem(
        name="act1.transpose",
        title="Shared-memory tiled transpose (CuPy RawKernel)",
        notebook="act1-hierarchy/transpose",
        function="transpose",
        language="cupy",
        make_inputs=transpose_inputs,
        reference=transpose_reference,
        library=transpose_library,
        library_name="torch x.t().contiguous()",
        bytes_moved=_transpose_bytes,
        flops=lambda size: 0.0,
        test_sizes=TRANSPOSE_TEST_SIZES,
        bench_sizes=TRANSPOSE_BENCH_SIZES,
        speed_scale=COPY_FRACTION_SCALE,
        solution_target=SOLUTION_TARGET,
        describe_size=_describe_shape,
    )
)

register(
    Problem(
        name="act1.reduction",
        title="Warp-shuffle sum reduction (CuPy RawKernel)",
        notebook="act1-hierarchy/reduction",
        function="reduce_sum",
        language="cupy",
        make_inputs=reduce_sum_inputs,
        reference=reduce_sum_reference,
        library=reduce_sum_library,
        library_name="cupy.sum",
        bytes_moved=lambda n: 4.0 * n + 4.0,
        flops=lambda n: float(max(n - 1, 0)),
        test_sizes=REDUCTION_TEST_SIZES,
        bench_sizes=REDUCTION_BENCH_SIZES,
        speed_scale=COPY_FRACTION_SCALE,
        solution_target=SOLUTION_TARGET,
        solution_library_ratio=1.0,
    )
)


# --- 1.5: peaks and ridge points from a spec table (pure Python) -----------------------------------

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


def _random_gpu(r: random.Random) -> dict:
    dtypes = r.sample(DTYPES, r.randrange(1, 5))
    return dict(
        sms=r.randrange(8, 200),
        clock_ghz=round(r.uniform(0.8, 2.2), 3),
        flops_per_clock_per_sm={d: r.choice((64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)) for d in dtypes},
        bus_width_bits=r.choice((128, 192, 256, 384, 4096, 5120, 6144, 8192)),
        data_rate_gbps=round(r.uniform(1.0, 24.0), 3),
    )


def _spec_cases(seed: int) -> list:
    r = random.Random(seed)
    fixed = [dict(spec) for spec in SPEC_TABLE.values()]
    # One SM, one clock, one dtype: the formulas with nothing to hide behind.
    fixed.append(dict(sms=1, clock_ghz=1.0, flops_per_clock_per_sm={"fp32": 2}, bus_width_bits=8, data_rate_gbps=1.0))
    return fixed + [_random_gpu(r) for _ in range(6)]


def _time_bound_cases(seed: int) -> list:
    r = random.Random(seed)
    table = {name: spec for name, spec in SPEC_TABLE.items() if "bf16" in spec["flops_per_clock_per_sm"]}
    cases = [
        # A bf16 4096^3 matmul: compute-bound everywhere.
        dict(flops=2 * 4096**3, bytes_moved=3 * 4096 * 4096 * 2, dtype="bf16", gpus=table),
        # A bf16 elementwise add of 2^26 elements: memory-bound everywhere.
        dict(flops=1 << 26, bytes_moved=6 << 26, dtype="bf16", gpus=table),
        # Intensity 250 FLOP/byte: compute-bound on the A100 and H200, memory-bound on the H100 and B200.
        dict(flops=250 * 10**9, bytes_moved=10**9, dtype="bf16", gpus=table),
    ]
    for _ in range(5):
        dtype = r.choice(DTYPES)
        gpus = {f"gpu{i}": _random_gpu(r) for i in range(r.randrange(1, 5))}
        for spec in gpus.values():
            spec["flops_per_clock_per_sm"][dtype] = r.choice((128, 512, 1024, 4096))
        cases.append(dict(flops=10 ** r.uniform(6, 15), bytes_moved=10 ** r.uniform(6, 11), dtype=dtype, gpus=gpus))
    return cases


GENERATIONS = "act1-hierarchy/gpu_generations"

register(ExactProblem(name="act1.peak_rates", title="Peak FLOP/s and bandwidth from a spec table", notebook=GENERATIONS, function="peak_rates", make_cases=_spec_cases, reference=peak_rates))
register(ExactProblem(name="act1.ridge_points", title="Ridge points per dtype", notebook=GENERATIONS, function="ridge_points", make_cases=_spec_cases, reference=ridge_points))
register(
    ExactProblem(
        name="act1.time_bounds",
        title="The same operation on different chips",
        notebook=GENERATIONS,
        function="time_bounds",
        make_cases=_time_bound_cases,
        reference=time_bounds,
        correctness_points=2.0,
    )
)
