"""Act 0: two memory-bound kernels whose only job is to move bytes at the speed of the memory.

Both read two float32 vectors and write one, so one call moves 12 bytes per element and does one
(vector add) or two (SAXPY) FLOPs per element: far left on the roofline, graded as a fraction of
this GPU's measured copy bandwidth.
"""

from __future__ import annotations

import torch

from ..metrics import COPY_FRACTION
from ..problem import LinearScale, Problem, register

# 1 and the neighbours of powers of two catch missing tail masks and off-by-one grids.
TEST_SIZES = (1, 127, 128, 129, 1000, 1023, 1024, 1025, 4097, 65_537, 1_000_003)
CPU_TEST_SIZES = (1, 127, 128, 129, 1000, 1023, 1024, 1025, 4097, 65_537)
# Each vector is 128 MB and 512 MB: far beyond any L2 (50 MB on an H100, 60 MB on an H200), long
# enough that launch and synchronisation costs are small against the kernel, and within a 16 GB T4.
BENCH_SIZES = (1 << 25, 1 << 27)

# The reference solutions must reach 90% of copy bandwidth; learners get full speed marks at 75%.
SOLUTION_TARGET = 0.90
COPY_BANDWIDTH_SCALE = LinearScale(metric=COPY_FRACTION, zero_at=0.30, full_at=0.75)


def _two_vectors(n: int, seed: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=generator, device=device, dtype=torch.float32)
    y = torch.randn(n, generator=generator, device=device, dtype=torch.float32)
    return x, y


def _three_streams(n: int) -> float:
    """Reads x and y, writes the output: 3 x 4 bytes per element."""
    return 12.0 * n


def vector_add_inputs(n: int, seed: int, device: str) -> dict:
    x, y = _two_vectors(n, seed, device)
    return {"x": x, "y": y}


def vector_add_reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.double() + y.double()


def vector_add_library(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.add(x, y)


def saxpy_inputs(n: int, seed: int, device: str) -> dict:
    x, y = _two_vectors(n, seed, device)
    # A scale drawn from the seed too, so a kernel that hard-codes a constant cannot pass.
    a = float(torch.empty(1).uniform_(-3.0, 3.0, generator=torch.Generator().manual_seed(seed)))
    return {"a": a, "x": x, "y": y}


def saxpy_reference(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return a * x.double() + y.double()


def saxpy_library(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # One fused kernel: y + a * x in a single pass, the fair baseline for a one-pass kernel.
    return torch.add(y, x, alpha=a)


vector_add = register(
    Problem(
        name="act0.vector_add",
        title="Vector add in Triton",
        notebook="act0-start/vector_add",
        function="vector_add",
        language="triton",
        make_inputs=vector_add_inputs,
        reference=vector_add_reference,
        library=vector_add_library,
        library_name="torch.add",
        bytes_moved=_three_streams,
        flops=lambda n: float(n),
        test_sizes=TEST_SIZES,
        cpu_test_sizes=CPU_TEST_SIZES,
        bench_sizes=BENCH_SIZES,
        speed_scale=COPY_BANDWIDTH_SCALE,
        solution_target=SOLUTION_TARGET,
    )
)

saxpy = register(
    Problem(
        name="act0.saxpy",
        title="SAXPY as a CuPy RawKernel",
        notebook="act0-start/saxpy",
        function="saxpy",
        language="cupy",
        make_inputs=saxpy_inputs,
        reference=saxpy_reference,
        library=saxpy_library,
        library_name="torch.add(y, x, alpha=a)",
        bytes_moved=_three_streams,
        flops=lambda n: 2.0 * n,
        test_sizes=TEST_SIZES,
        bench_sizes=BENCH_SIZES,
        speed_scale=COPY_BANDWIDTH_SCALE,
        solution_target=SOLUTION_TARGET,
    )
)
