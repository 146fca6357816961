"""Act 4, the Triton half: a fused softmax, a matmul and FlashAttention's forward pass.

Each kernel avoids materialising a large intermediate in HBM. The softmax reads each row once and
writes it once (graded as a fraction of copy bandwidth); the matmul keeps tiles of A and B on chip
(graded against cuBLAS); attention never builds the S x S scores (graded against PyTorch's SDPA
flash backend, with cuDNN's attention timed beside it).

The matmul is two problems, ``act4.matmul_bf16`` and ``act4.matmul_fp16``, graded on the same
function from one notebook: the output dtype, the tolerance's units in the last place and the
measured matmul ceiling that sets the physical floor all depend on the dtype, and each of them is
one field of a problem.
"""

from __future__ import annotations

import math

import torch

from ..metrics import COPY_FRACTION, LIBRARY_RATIO
from ..problem import Baseline, LinearScale, Problem, register
from . import baselines

# --------------------------------------------------------------------------------------------------
# Fused softmax
# --------------------------------------------------------------------------------------------------

# Row lengths that are not powers of two (1, 127, 781, 1823, 4097) catch a missing column mask;
# numbers of rows that are not multiples of anything catch a grid that is off by one.
SOFTMAX_TEST_SIZES = ((1, 1), (3, 127), (128, 128), (129, 781), (1823, 781), (64, 1823), (33, 4097), (7, 16384))
SOFTMAX_CPU_TEST_SIZES = ((1, 1), (3, 127), (17, 781), (5, 1823), (2, 4097))
# 256 MiB in each direction per call, 8192 and 4096 floats per row: far beyond L2, and enough rows
# that every SM has dozens of them.
SOFTMAX_BENCH_SIZES = ((8192, 8192), (16384, 4096))


def softmax_inputs(size: tuple[int, int], seed: int, device: str) -> dict:
    rows, cols = size
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32) * 4.0
    # Each row is shifted by up to +-120: exp() of such values overflows float32 (it does past 88),
    # so a kernel that forgets to subtract the row's maximum returns inf / inf = NaN.
    shift = torch.empty(rows, 1, device=device, dtype=torch.float32).uniform_(-120.0, 120.0, generator=generator)
    return {"x": x + shift}


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), dim=-1)


def softmax_library(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


softmax = register(
    Problem(
        name="act4.softmax",
        title="Fused row softmax in Triton",
        notebook="act4-kernels/softmax",
        function="softmax",
        language="triton",
        make_inputs=softmax_inputs,
        reference=softmax_reference,
        library=softmax_library,
        library_name="torch.softmax",
        # One read and one write of every float32 element: the minimum for any softmax.
        bytes_moved=lambda size: 2.0 * size[0] * size[1] * 4,
        # max, subtract, exp, sum, divide: about five operations per element.
        flops=lambda size: 5.0 * size[0] * size[1],
        test_sizes=SOFTMAX_TEST_SIZES,
        cpu_test_sizes=SOFTMAX_CPU_TEST_SIZES,
        bench_sizes=SOFTMAX_BENCH_SIZES,
        speed_scale=LinearScale(metric=COPY_FRACTION, zero_at=0.30, full_at=0.75),
        solution_target=0.90,
        describe_size=lambda size: f"{size[0]}x{size[1]}",
    )
)

# --------------------------------------------------------------------------------------------------
# Matmul, bf16 and fp16
# --------------------------------------------------------------------------------------------------

# (M, N, K): 1x1x1, sizes around the block sizes (127/128/129), K that is not a multiple of any BLOCK_K,
# long thin shapes, and the benchmark sizes themselves.
MATMUL_TEST_SIZES = (
    (1, 1, 1),
    (127, 129, 65),
    (128, 128, 128),
    (129, 127, 257),
    (1000, 1000, 1000),
    (333, 1823, 781),
    (4096, 64, 1000),
    (1, 4096, 4096),
)
MATMUL_CPU_TEST_SIZES = ((1, 1, 1), (17, 33, 15), (127, 129, 65), (65, 31, 130))
MATMUL_BENCH_SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))


def _matmul_inputs(dtype: torch.dtype):
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


def _matmul_bytes(size: tuple[int, int, int]) -> float:
    m, n, k = size
    return 2.0 * (m * k + k * n + m * n)


def _matmul_flops(size: tuple[int, int, int]) -> float:
    m, n, k = size
    return 2.0 * m * n * k


for _dtype, _suffix, _title in ((torch.bfloat16, "bf16", "bfloat16"), (torch.float16, "fp16", "float16")):
    register(
        Problem(
            name=f"act4.matmul_{_suffix}",
            title=f"Matmul in Triton ({_title}, float32 accumulation)",
            notebook="act4-kernels/matmul",
            function="matmul",
            language="triton",
            make_inputs=_matmul_inputs(_dtype),
            reference=matmul_reference,
            library=matmul_library,
            library_name="torch.matmul (cuBLAS)",
            bytes_moved=_matmul_bytes,
            flops=_matmul_flops,
            test_sizes=MATMUL_TEST_SIZES,
            cpu_test_sizes=MATMUL_CPU_TEST_SIZES,
            bench_sizes=MATMUL_BENCH_SIZES,
            speed_scale=LinearScale(metric=LIBRARY_RATIO, zero_at=0.30, full_at=0.80),
            solution_target=0.95,
            compute_dtype=_title,
            out_dtype=_title,
            describe_size=lambda size: f"{size[0]}x{size[1]}x{size[2]}",
        )
    )

# --------------------------------------------------------------------------------------------------
# FlashAttention forward
# --------------------------------------------------------------------------------------------------

# (B, H, S, D, causal). S = 1, 17, 127, 129 and 1000 are not multiples of any block; both head dims
# and both masks.
ATTENTION_TEST_SIZES = tuple(
    (b, h, s, d, causal)
    for (b, h, s) in ((1, 2, 1), (2, 3, 17), (1, 4, 127), (2, 2, 129), (1, 8, 1000), (2, 4, 2048))
    for d in (64, 128)
    for causal in (False, True)
)
ATTENTION_CPU_TEST_SIZES = (
    (1, 2, 1, 64, False),
    (1, 2, 17, 64, True),
    (1, 1, 127, 128, False),
    (1, 1, 129, 64, True),
    (1, 1, 129, 128, True),
    (2, 1, 67, 64, False),
)
# 4 x 32 heads of 4096 tokens: 128 heads x 32 query tiles of 128 rows, many waves on any GPU.
ATTENTION_BENCH_SIZES = (
    (4, 32, 4096, 128, False),
    (4, 32, 4096, 128, True),
    (4, 32, 4096, 64, False),
    (4, 32, 4096, 64, True),
)
# How many heads the float64 reference computes at a time (an S x S float64 block per head).
_REFERENCE_BYTES = 1 << 30


def attention_inputs(size: tuple, seed: int, device: str) -> dict:
    b, h, s, d, causal = size
    generator = torch.Generator(device=device).manual_seed(seed)

    def one() -> torch.Tensor:
        return torch.randn(b, h, s, d, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)

    return {"q": one(), "k": one(), "v": one(), "causal": bool(causal)}


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) v in float64 from the bf16 inputs, a few heads at a time."""
    b, h, s, d = q.shape
    q2, k2, v2 = (t.reshape(b * h, s, d) for t in (q, k, v))
    out = torch.empty(b * h, s, d, dtype=torch.float64, device=q.device)
    step = max(1, _REFERENCE_BYTES // (3 * 8 * s * s))
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1) if causal else None
    for start in range(0, b * h, step):
        chunk = slice(start, start + step)
        scores = torch.matmul(q2[chunk].double(), k2[chunk].double().transpose(-1, -2)) / math.sqrt(d)
        if mask is not None:
            scores.masked_fill_(mask, float("-inf"))
        out[chunk] = torch.matmul(torch.softmax(scores, dim=-1), v2[chunk].double())
        del scores
    return out.reshape(b, h, s, d)


ATTENTION_HEAD_DIMS = (64, 128)
# The targets are ratios to SDPA's flash backend (FlashAttention-2), measured against it on an H100
# and an H200; the backends after it are what SDPA runs where flash does not (a T4, a build without it).
ATTENTION_BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
ATTENTION_SPEED_SCALE = LinearScale(metric=LIBRARY_RATIO, zero_at=0.20, full_at=0.70)


def attention_baseline(device) -> Baseline:
    """What the attention speed grade is measured against on ``device``: SDPA's flash backend where it
    runs, graded; elsewhere the SDPA backend that does run, labelled as such and not graded, since no
    ratio between it and the flash backend has been measured to scale the targets by. cuDNN's
    attention is timed beside it wherever it runs."""
    backend = baselines.first_sdpa_backend(device, ATTENTION_BACKENDS, ATTENTION_HEAD_DIMS)
    on_gpu = baselines.device_key(device).startswith("cuda")
    extras = (("cuDNN attention", baselines.sdpa("CUDNN_ATTENTION")),) if on_gpu and baselines.sdpa_runs("CUDNN_ATTENTION", device, ATTENTION_HEAD_DIMS) else ()
    label = baselines.SDPA_LABELS[backend]
    if backend == "FLASH_ATTENTION":
        return Baseline(label=label, run=baselines.sdpa(backend), speed_scale=ATTENTION_SPEED_SCALE, extra_libraries=extras)
    note = (
        f"SDPA's flash backend does not run on {baselines.describe_device(device)} (it needs compute capability 8.0 or newer "
        f"and a build with it), so the baseline is the {label}. The speed targets are ratios to the flash backend; "
        "your ratio to this one is shown, not graded."
    )
    return Baseline(label=f"{label} (no flash backend here)", run=baselines.sdpa(backend), speed_scale=None, note=note, extra_libraries=extras)


def attention_library(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """The backend ``attention_baseline`` picks for the inputs' device: SDPA's FlashAttention-2 backend
    (on a CPU, its CPU flash kernel) where it runs."""
    return attention_baseline(q.device).run(q, k, v, causal)


def _attention_flops(size: tuple) -> float:
    b, h, s, d, causal = size
    # Two matmuls (Q K^T and P V) of 2*S*S*D FLOPs each per head; a causal mask skips half.
    full = 4.0 * b * h * s * s * d
    return full / 2 if causal else full


def _attention_bytes(size: tuple) -> float:
    b, h, s, d, _ = size
    # Read Q, K, V and write O once, in bf16: the traffic when the scores never leave the chip.
    return 4.0 * b * h * s * d * 2


def _describe_attention(size: tuple) -> str:
    b, h, s, d, causal = size
    return f"B={b} H={h} S={s} D={d}" + (" causal" if causal else "")


flash_attention = register(
    Problem(
        name="act4.flash_attention",
        title="FlashAttention forward in Triton",
        notebook="act4-kernels/flash_attention",
        function="flash_attention",
        language="triton",
        make_inputs=attention_inputs,
        reference=attention_reference,
        library=attention_library,
        library_name="SDPA flash backend",
        bytes_moved=_attention_bytes,
        flops=_attention_flops,
        test_sizes=ATTENTION_TEST_SIZES,
        cpu_test_sizes=ATTENTION_CPU_TEST_SIZES,
        bench_sizes=ATTENTION_BENCH_SIZES,
        speed_scale=ATTENTION_SPEED_SCALE,
        solution_target=1.1,
        compute_dtype="bfloat16",
        out_dtype="bfloat16",
        describe_size=_describe_attention,
        baseline=attention_baseline,
    )
)
