"""What Act 4's matrix products share: C = A @ B for row-major A (M x K) and B (K x N), sizes
(M, N, K), 2*M*N*K FLOPs for one call, which reads A and B and writes C at least once.

The SGEMM progression (``act4.sgemm_<step>``, one folder per step) is nine CUDA C exercises through
CuPy RawKernels, one change per step, after the well-known SGEMM worklog: naive, global-memory
coalescing, shared-memory cache blocking, 1-D block tiling, 2-D block tiling, vectorised memory
access (float4 loads and A transposed in shared memory), bank-conflict-free shared-memory reads,
double buffering, and warp tiling with autotuned tile shapes. Each computes C in float32,
accumulating in float32, and is graded for speed as a ratio to cuBLAS SGEMM (torch.matmul with TF32
off) timed in the same run on the same GPU. At 4096^3 one call does 683 FLOPs per byte, far right of
any ridge point: compute-bound, so the physical floor is the measured float32 (non-tensor-core) FMA
rate. A tenth step, ``act4.sgemm_tf32``, is the same product on TF32 tensor cores in Triton, graded
against cuBLAS with TF32 on (below).

The speed marks grow along the path: the naive kernel earns full marks at a few percent of cuBLAS,
the warp-tiled one at 0.75x. The worklog's path on an A6000 reached 1.3%, 8.5%, 13%, 37%, 69%, 78%
and (warp tiling) 94% of cuBLAS. cuBLAS gains more than the early, cache-bound steps from an
H100/H200 (it runs at about 76% of the FMA peak there, 60% on the A6000), so the early ratios shrink
by about a quarter; full marks sit below what each step's reference solution reaches, and
tests/gpu/tune_act4_sgemm.py and tune_act4_warptile.py measure both. On an H200, before the split of
the vectorised step into steps 6 to 8, the six steps measured 0.01x, 0.11x, 0.17x, 0.31x, 0.41x and
(the three changes of steps 6 to 8 at once) 0.83x. The reference solution of the warp-tiled step must
reach 0.90x cuBLAS on an H100/H200: 0.93x and 1.03x at 4096^3 and 8192^3 on an H200
(results/runs/2026-11-26-h200-third-session/c/).

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

from ..baselines import ieee_fp32_matmul, tf32_matmul


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


# --- TF32: float32 A and B on tensor cores, cuBLAS with TF32 on ---------------------------------------


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 rounded to nearest even at TF32's 10 mantissa bits (Inf and NaN kept): what a TF32
    tensor core multiplies."""
    bits = x.contiguous().view(torch.int32)
    rounded = (bits + (((bits >> 13) & 1) + 0xFFF)) & ~0x1FFF
    special = (bits & 0x7F800000) == 0x7F800000
    return torch.where(special, bits, rounded).view(torch.float32)


def sgemm_tf32_library(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """cuBLAS on TF32 tensor cores (the setting restored after). A CPU has no TF32: there it is the
    float32 product, and the tolerance takes a TF32 product's error from ``sgemm_tf32_error_model``,
    as on a GPU where cuBLAS computes a shape in float32."""
    if A.is_cuda:
        with tf32_matmul():
            return torch.matmul(A, B)
    return sgemm_library(A, B)


def sgemm_tf32_error_model(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """What TF32 inputs cost, on every device: the inputs rounded to TF32, multiplied and summed in
    true float32. cuBLAS with TF32 on takes its tensor cores for square-ish products but computes a
    matrix-vector shape (M or N = 1) in plain float32, whose error is then far below any TF32
    kernel's; this product's error sets the tolerance where it is the larger (the spec's comment)."""
    with ieee_fp32_matmul():
        return torch.matmul(round_to_tf32(A), round_to_tf32(B))


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
