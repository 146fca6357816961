"""What Act 4's matrix products share: C = A @ B for row-major A (M x K) and B (K x N), sizes
(M, N, K), 2*M*N*K FLOPs for one call, which reads A and B and writes C at least once.

The SGEMM progression (``act4.sgemm_<step>``, one folder per step) is six CUDA C exercises through
CuPy RawKernels, one per step of the well-known SGEMM worklog (naive, global-memory coalescing,
shared-memory cache blocking, 1-D block tiling, 2-D block tiling, vectorised memory access). Each
computes C in float32, accumulating in float32, and is graded for speed as a ratio to cuBLAS SGEMM
(torch.matmul with TF32 off) timed in the same run on the same GPU. At 4096^3 one call does 683
FLOPs per byte, far right of any ridge point: compute-bound, so the physical floor is the measured
float32 (non-tensor-core) FMA rate.

The speed marks grow along the path: the naive kernel earns full marks at a few percent of cuBLAS,
the vectorised one at 0.55x. The worklog's path on an A6000 reached 1.3%, 8.5%, 13%, 37%, 69% and
78% of cuBLAS. cuBLAS gains more than the early, cache-bound steps from an H100/H200 (it runs at
about 76% of the FMA peak there, 60% on the A6000), so the early ratios shrink by about a quarter;
full marks sit below what each step's reference solution reaches, and tests/gpu/tune_act4_sgemm.py
measures both. The reference solution of the last step must reach 0.70x cuBLAS on an H100/H200.

Every SGEMM step's spec sets ``tolerance_factor = 16``: every kernel of the progression gives each
output element to one thread that adds its K products one after another; cuBLAS may sum in another
order (blocked, or split along K). On a CPU simulation (128x128 outputs, float64 reference)
one-after-another FMA accumulation was 2.5x, 6.1x and 9.3x as far off as a blocked summation at
K = 517, 4096 and 8192. Sixteen times the library's error leaves room for that; a kernel that rounds
its inputs to float16 or TF32 (10 mantissa bits) is still 5x to 50x beyond it.

The Triton matmul is two problems, ``act4.matmul_bf16`` and ``act4.matmul_fp16``, graded on the same
function from one notebook: the output dtype, the tolerance's units in the last place and the
measured matmul ceiling that sets the physical floor all depend on the dtype, and each of them is
one field of a problem. ``act4.matmul_bias_gelu`` (the same product in bf16 with a bias and a GELU
fused into its epilogue) reuses the sizes, the float64 product, the traffic and the FLOPs below.
"""

from __future__ import annotations

import torch

from ..baselines import ieee_fp32_matmul


def describe_size(size) -> str:
    m, n, k = size
    return f"{m}x{n}x{k}"


def matmul_flops(size) -> float:
    m, n, k = size
    return 2.0 * m * n * k


# --- SGEMM: float32 A and B, cuBLAS with TF32 off ---------------------------------------------------


def sgemm_inputs(size, seed: int, device: str) -> dict:
    m, n, k = size
    generator = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, generator=generator, device=device, dtype=torch.float32)
    b = torch.randn(k, n, generator=generator, device=device, dtype=torch.float32)
    return {"A": a, "B": b}


def sgemm_reference(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return A.double() @ B.double()


def sgemm_library(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """cuBLAS SGEMM with true float32 arithmetic: TF32 (10-bit mantissa tensor cores) switched off
    for this call and the previous setting restored, whatever it was."""
    with ieee_fp32_matmul():
        return torch.matmul(A, B)


def sgemm_bytes(size) -> float:
    m, n, k = size
    return float(m * k + k * n + m * n) * 4.0


# --- Triton matmul: bfloat16 or float16 A and B, float32 accumulation, cuBLAS -------------------------


def matmul_inputs(dtype: torch.dtype):
    """make_inputs for one dtype: A and B drawn in float32, then rounded to ``dtype``."""

    def make_inputs(size: tuple[int, int, int], seed: int, device: str) -> dict:
        m, n, k = size
        generator = torch.Generator(device=device).manual_seed(seed)
        a = torch.randn(m, k, generator=generator, device=device, dtype=torch.float32).to(dtype)
        b = torch.randn(k, n, generator=generator, device=device, dtype=torch.float32).to(dtype)
        return {"a": a, "b": b}

    return make_inputs


def matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double() @ b.double()


def matmul_library(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


def matmul_bytes(size: tuple[int, int, int]) -> float:
    m, n, k = size
    return 2.0 * (m * k + k * n + m * n)
