"""Act 4's SGEMM progression on a CPU: the problem definitions, the NEEDS GPU answer, and the CUDA
sources of the nine CuPy solution notebooks (each starting from the previous step's solution), compiled with nvcc for sm_90 and run, host wrapper and all,
on a CPU emulation of the CUDA execution model (one OS thread per CUDA thread, a barrier for
__syncthreads) against a float64 product on shapes with ragged edges on every side."""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from autograder import checking, grading, metrics, registry
from autograder.problems.act4 import matmul as act4_matmul

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("naive", "coalesced", "smem", "1d_tiling", "2d_tiling", "vectorized", "conflict_free", "double_buffered", "warptiling")
_SOURCE_STRING = re.compile(r'(\w+_SOURCE) = r"""\n(.*?)"""', re.S)


def _solution_code(step: str) -> str:
    nb = json.loads((ROOT / "solutions" / "act4-kernels" / f"sgemm_{step}.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(cells) == 1, f"sgemm_{step}: expected one solution cell"
    return "".join(cells[0]["source"])


def _cuda_source(step: str) -> str:
    """The step's own CUDA source: the last source string of its solution cell (the first, from step
    2 on, is the previous step's solution that the exercise starts from)."""
    found = _SOURCE_STRING.findall(_solution_code(step))
    assert len(found) == (1 if step == STEPS[0] else 2), f"sgemm_{step}: expected a starting source and its own"
    return found[-1][1]


# --- problem definitions ---------------------------------------------------------------------------


def test_nine_steps_are_registered_in_order_and_name_their_notebooks():
    names = [p.name for p in registry.all_problems() if p.name.startswith("act4.sgemm_") and p.language == "cupy"]
    assert sorted(names) == sorted(f"act4.sgemm_{s}" for s in STEPS)
    for step in STEPS:
        p = registry.get(f"act4.sgemm_{step}")
        assert p.language == "cupy" and p.needs_gpu
        assert p.notebook == f"act4-kernels/sgemm_{step}" and p.function == f"sgemm_{step}"
        assert (ROOT / "solutions" / f"{p.notebook}.ipynb").exists()
        assert (ROOT / "exercises" / f"{p.notebook}.ipynb").exists()
        assert p.compute_dtype == "float32" and p.out_dtype == "float32"
        assert p.speed_scale.metric is metrics.LIBRARY_RATIO


def test_speed_marks_grow_along_the_path():
    problems = [registry.get(f"act4.sgemm_{s}") for s in STEPS]
    for earlier, later in zip(problems[:-1], problems[1:], strict=True):
        assert later.speed_scale.zero_at > earlier.speed_scale.zero_at
        assert later.speed_scale.full_at > earlier.speed_scale.full_at
        assert later.solution_target > earlier.solution_target
    for p in problems:
        assert 0 < p.speed_scale.zero_at < p.speed_scale.full_at <= p.solution_target
    final = problems[-1]
    assert final.solution_target == pytest.approx(0.90)
    assert 0.7 <= final.speed_scale.full_at <= 0.8


def test_each_step_starts_from_the_previous_solution():
    """The exercise's solution cell holds, outside nbgrader's markers, the previous step's CUDA source
    with its kernels renamed; the released exercise keeps it and stops at the stub's raise."""
    for previous, step in zip(STEPS[:-1], STEPS[1:], strict=True):
        code = _solution_code(step)
        starting = _SOURCE_STRING.findall(code)[0][1]
        assert starting == _cuda_source(previous).replace(f"sgemm_{previous}_", f"sgemm_{step}_"), step
        assert code.index(starting) < code.index("### BEGIN SOLUTION"), step
        nb = json.loads((ROOT / "exercises" / "act4-kernels" / f"sgemm_{step}.ipynb").read_text())
        released = "".join(next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))["source"])
        assert starting in released and "raise NotImplementedError()" in released, step


def test_sizes_flops_and_bytes():
    for step in STEPS:
        p = registry.get(f"act4.sgemm_{step}")
        assert all(len(s) == 3 for s in (*p.test_sizes, *p.bench_sizes))
        assert p.flops((3, 5, 7)) == 2 * 3 * 5 * 7
        assert p.bytes_moved((3, 5, 7)) == (3 * 7 + 7 * 5 + 3 * 5) * 4
        assert p.describe_size((4096, 2048, 1024)) == "4096x2048x1024"
        if step == "naive":
            # The naive kernel is timed where one call stays well under a second.
            assert p.bench_sizes == ((2048, 2048, 2048),)
        else:
            assert (4096, 4096, 4096) in p.bench_sizes
    sizes = set(registry.get("act4.sgemm_naive").test_sizes)
    assert all(set(registry.get(f"act4.sgemm_{s}").test_sizes) == sizes for s in STEPS)
    assert {(1, 1, 1), (127, 129, 131), (1823, 781, 517)} <= sizes
    # Shapes off every tile (32, 64, 128, BK = 8) on the scalar path, and with K and N multiples of
    # 4 but not of any tile, on the float4 path of the vectorised step.
    assert any(m % 128 and n % 128 and k % 8 and (k % 4 or n % 4) for m, n, k in sizes)
    assert any(m % 128 and n % 128 and k % 8 and not (k % 4 or n % 4) for m, n, k in sizes)


def test_inputs_reference_and_library():
    p = registry.get("act4.sgemm_vectorized")
    inputs = p.make_inputs((5, 7, 3), 11, "cpu")
    assert list(inputs) == ["A", "B"]
    assert inputs["A"].shape == (5, 3) and inputs["B"].shape == (3, 7)
    assert inputs["A"].dtype == torch.float32 and inputs["A"].is_contiguous()
    other = p.make_inputs((5, 7, 3), 12, "cpu")
    assert not torch.equal(inputs["A"], other["A"])
    ref = p.reference(**inputs)
    assert ref.dtype == torch.float64
    torch.testing.assert_close(ref, inputs["A"].double() @ inputs["B"].double())


def test_library_turns_tf32_off_for_the_call_and_restores_the_setting(monkeypatch):
    matmul = torch.backends.cuda.matmul
    seen = []
    real = torch.matmul

    def spy(a, b):
        seen.append(matmul.fp32_precision)
        return real(a, b)

    previous = matmul.fp32_precision
    monkeypatch.setattr(torch, "matmul", spy)
    try:
        matmul.fp32_precision = "tf32"
        a, b = torch.randn(4, 3), torch.randn(3, 2)
        out = act4_matmul.sgemm_library(a, b)
        assert seen == ["ieee"]
        assert matmul.fp32_precision == "tf32"
        torch.testing.assert_close(out, real(a, b))
    finally:
        matmul.fp32_precision = previous


def test_tolerance_separates_float32_orders_from_half_precision_inputs():
    """The derived tolerance (the steps' tolerance_factor x the library's error) must accept float32
    sums in one-after-another order against a blocked library sum, and reject float16-rounded inputs."""
    gen = torch.Generator().manual_seed(0)
    m, n, k = 64, 64, 2048
    a = torch.randn(m, k, generator=gen)
    b = torch.randn(k, n, generator=gen)
    ref = a.double() @ b.double()
    # The library's order: sums of 8-element blocks, added pairwise-ish by torch on the CPU.
    library_error = float(((a @ b).double() - ref).abs().max())
    acc = torch.zeros(m, n, dtype=torch.float64)
    for i in range(k):  # one FMA per step: exact product and sum, rounded once to float32
        acc = (acc + a[:, i : i + 1].double() * b[i : i + 1, :].double()).float().double()
    sequential_error = float((acc - ref).abs().max())
    half_error = float(((a.half().float() @ b.half().float()).double() - ref).abs().max())
    factors = {registry.get(f"act4.sgemm_{s}").tolerance_factor for s in STEPS}
    assert len(factors) == 1
    allowed = factors.pop() * library_error
    assert sequential_error < allowed / 1.5
    assert half_error > 3 * allowed


def test_library_passes_and_wrong_answers_fail_at_every_test_size():
    """The problem's own proof, with (M, N, K) sizes: cuBLAS's stand-in (torch on the CPU) passes;
    zeros, a constant, the input A itself and another seed's product all fail."""
    p = dataclasses.replace(registry.get("act4.sgemm_vectorized"), language="python")

    def other_seed(A, B):
        other = p.make_inputs((A.shape[0], B.shape[1], A.shape[1]), 987654321, "cpu")
        return p.library(**other)

    wrong = {
        "zeros": lambda A, B: torch.zeros(A.shape[0], B.shape[1]),
        "constant": lambda A, B: torch.ones(A.shape[0], B.shape[1]),
        "input itself": lambda A, B: A.clone(),
        "another seed's answer": other_seed,
    }
    for i, size in enumerate(p.test_sizes):
        # One case per size, its float64 product computed once for the five functions.
        prepared = checking.prepare_case(p, size, seed=100 + i, device="cpu")
        assert checking.check_case(p, p.library, size, seed=100 + i, device="cpu", prepared=prepared).passed, size
        for name, fn in wrong.items():
            case = checking.check_case(p, fn, size, seed=100 + i, device="cpu", prepared=prepared)
            assert not case.passed, f"{name} passed at {size}"


@pytest.mark.parametrize("step", STEPS)
def test_needs_a_gpu_on_a_cpu(step):
    p = registry.get(f"act4.sgemm_{step}")
    result = grading.grade_source(p, _solution_code(step), p.function, device="cpu")
    assert result["status"] == "NEEDS GPU"
    assert "need an NVIDIA GPU" in result["message"]
    assert result["points"] == 0


# --- the CUDA sources: compiled for sm_90, and run on an emulation -----------------------------------


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("step", STEPS)
def test_cuda_source_compiles_for_sm90(step, tmp_path):
    source = tmp_path / f"sgemm_{step}.cu"
    source.write_text(_cuda_source(step))
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", "-o", str(tmp_path / "out.o"), str(source), "-Xptxas", "-v"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # Register arrays that spill to local memory would make the tiled kernels crawl.
    assert re.search(r"\b[1-9]\d* bytes spill", proc.stderr) is None, proc.stderr


EMULATION_HEADER = r"""
// The CUDA execution model on a CPU: blocks run one after another; the threads of a block are OS
// threads, __syncthreads() is a barrier, and __shared__ arrays are static locals (one per block at
// a time). Enough to check indexing, edge masks and synchronisation, not speed.
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>
struct emu_uint3 { unsigned x = 0, y = 0, z = 0; };
struct emu_dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local emu_uint3 threadIdx;
static emu_uint3 blockIdx;
static emu_dim3 blockDim, gridDim;
static std::barrier<>* emu_barrier = nullptr;
inline void __syncthreads() { emu_barrier->arrive_and_wait(); }
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
typedef void (*emu_kernel)(const float*, const float*, float*, int, int, int);
static void emu_launch(emu_kernel k, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                       const float* A, const float* B, float* C, int M, int N, int K) {
    gridDim = {gx, gy, 1};
    blockDim = {bx, by, 1};
    for (unsigned y = 0; y < gy; ++y)
        for (unsigned x = 0; x < gx; ++x) {
            blockIdx = {x, y, 0};
            std::barrier<> bar(bx * by);
            emu_barrier = &bar;
            std::vector<std::thread> threads;
            for (unsigned t = 0; t < bx * by; ++t)
                threads.emplace_back([=] { threadIdx = {t % bx, t / bx, 0}; k(A, B, C, M, N, K); });
            for (auto& th : threads) th.join();
        }
}
"""
_KERNEL_NAME = re.compile(r'extern "C" __global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(')


def _emulated_library(source: str, folder: Path, defines: tuple[str, ...] = ()) -> ctypes.CDLL:
    names = _KERNEL_NAME.findall(source)
    assert names, "no extern \"C\" __global__ kernel in the source"
    launchers = "\n".join(
        f'extern "C" void launch_{n}(unsigned gx, unsigned gy, unsigned bx, unsigned by, const float* A, '
        f"const float* B, float* C, int M, int N, int K) {{ emu_launch({n}, gx, gy, bx, by, A, B, C, M, N, K); }}"
        for n in names
    )
    tag = hashlib.sha256((source + " ".join(defines)).encode()).hexdigest()[:12]
    cpp = folder / f"emu_{tag}.cpp"
    cpp.write_text(EMULATION_HEADER + "\n" + source + "\n" + launchers + "\n")
    so = folder / f"emu_{tag}.so"
    proc = subprocess.run(
        # -fno-gnu-unique: the __shared__ arrays are static locals of an inline template, which g++
        # makes process-wide unique symbols: a second library loaded into this process (another
        # step, or another tile configuration) would otherwise write into the first one's arrays.
        ["g++", "-std=c++20", "-O1", "-w", "-shared", "-fPIC", "-fno-gnu-unique", "-pthread", *defines, str(cpp), "-o", str(so)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0 and "barrier" in proc.stderr:
        pytest.skip("this C++ compiler has no std::barrier (C++20)")
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(so))


class _DevicePointer:
    def __init__(self, array: np.ndarray) -> None:
        self.ptr = array.ctypes.data


class _EmulatedArray(np.ndarray):
    """A NumPy array that answers ``.data.ptr`` as a CuPy array does."""

    @property
    def data(self):  # type: ignore[override]
        return _DevicePointer(self)


def _fake_cupy(library: ctypes.CDLL, launches: list) -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.ndarray = _EmulatedArray
    cp.float32, cp.int32, cp.int64 = np.float32, np.int32, np.int64

    def empty(shape, dtype=np.float32):
        # NaN-filled, with a NaN canary past the end: an unwritten element or a write past the end shows.
        buffer = np.full(int(np.prod(shape)) + 64, np.nan, dtype=dtype)
        out = buffer[: int(np.prod(shape))].reshape(shape).view(_EmulatedArray)
        out.canary = buffer[int(np.prod(shape)) :]
        launches.append(out)
        return out

    class RawKernel:
        def __init__(self, code: str, name: str, **_) -> None:
            self.launch = getattr(library, f"launch_{name}")

        def __call__(self, grid, block, args):
            grid, block = (*grid, 1, 1)[:2], (*block, 1, 1)[:2]
            assert block[0] * block[1] <= 1024, "more than 1024 threads in a block"
            a, b, c, m, n, k = args
            fp = ctypes.POINTER(ctypes.c_float)
            self.launch(*map(int, grid), *map(int, block), a.ctypes.data_as(fp), b.ctypes.data_as(fp), c.ctypes.data_as(fp), int(m), int(n), int(k))

    cp.empty = empty
    cp.RawKernel = RawKernel
    return cp


# (M, N, K): a single element; ragged on every side; K and N multiples of 4 (the float4 path) with
# M, N, K off the tiles; one row; one column.
EMULATED_SIZES = ((1, 1, 1), (37, 41, 19), (130, 129, 13), (131, 132, 36), (1, 260, 12), (67, 1, 9))


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
@pytest.mark.parametrize("step", STEPS)
def test_solution_is_correct_on_an_emulated_gpu(step, tmp_path, monkeypatch):
    library = _emulated_library(_cuda_source(step), tmp_path)
    launches: list = []
    fake = _fake_cupy(library, launches)
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake)
    namespace: dict = {}
    exec(compile(_solution_code(step), f"sgemm_{step}", "exec"), namespace)
    fn = namespace[f"sgemm_{step}"]
    rng = np.random.default_rng(0)
    for m, n, k in EMULATED_SIZES:
        a = rng.standard_normal((m, k)).astype(np.float32).view(_EmulatedArray)
        b = rng.standard_normal((k, n)).astype(np.float32).view(_EmulatedArray)
        a_before, b_before = a.copy(), b.copy()
        out = fn(a, b)
        assert out is launches[-1] and out.shape == (m, n) and out.dtype == np.float32
        assert np.isnan(out.canary).all(), f"{m}x{n}x{k}: wrote past the end of C"
        expected = a.astype(np.float64) @ b.astype(np.float64)
        error = np.abs(out - expected)
        assert not np.isnan(out).any(), f"{m}x{n}x{k}: elements of C left unwritten"
        assert error.max() <= 1e-5 * np.abs(expected).max() * max(1, k) ** 0.5 + 1e-6, f"{m}x{n}x{k}: max error {error.max()}"
        assert np.array_equal(a, a_before) and np.array_equal(b, b_before)


def _warptiling_namespace(monkeypatch, library) -> dict:
    monkeypatch.setitem(__import__("sys").modules, "cupy", _fake_cupy(library, []))
    namespace: dict = {}
    exec(compile(_solution_code("warptiling"), "sgemm_warptiling", "exec"), namespace)
    return namespace


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_every_warptiling_configuration_is_correct_on_an_emulated_gpu(tmp_path, monkeypatch):
    """The wrapper compiles each configuration with -D options; the emulator compiles the same
    source with the same macros, and every configuration, float4 and scalar, matches float64."""
    source = _cuda_source("warptiling")
    configs = _warptiling_namespace(monkeypatch, None)["CONFIGS"]
    rng = np.random.default_rng(1)
    names = ("BM", "BN", "BK", "WM", "WN", "WMITER", "WNITER", "MIN_BLOCKS")
    for config in configs:
        library = _emulated_library(source, tmp_path, tuple(f"-D{n}={v}" for n, v in zip(names, config, strict=True)))
        namespace = _warptiling_namespace(monkeypatch, library)
        for m, n, k in ((131, 260, 36), (67, 129, 19)):
            a = rng.standard_normal((m, k)).astype(np.float32).view(_EmulatedArray)
            b = rng.standard_normal((k, n)).astype(np.float32).view(_EmulatedArray)
            c = namespace["cp"].empty((m, n), dtype=np.float32)
            vec = k % 4 == 0 and n % 4 == 0
            namespace["launch"](config, vec, a, b, c)
            expected = a.astype(np.float64) @ b.astype(np.float64)
            assert not np.isnan(c).any() and np.isnan(c.canary).all(), f"{config} at {m}x{n}x{k}"
            assert np.abs(c - expected).max() <= 1e-5 * np.abs(expected).max() * k**0.5, f"{config} at {m}x{n}x{k}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_warptiling_configurations_compile_without_spills_and_state_their_registers(tmp_path):
    """Every configuration the wrapper may choose compiles for sm_90 without spills, and the register
    counts the notebook states are nvcc's."""
    source = tmp_path / "warptiling.cu"
    source.write_text(_cuda_source("warptiling"))
    code = _solution_code("warptiling")
    namespace: dict = {}
    exec(compile(code[code.index("CONFIGS = ("):code.index("_kernels")], "configs", "exec"), namespace)
    names = ("BM", "BN", "BK", "WM", "WN", "WMITER", "WNITER", "MIN_BLOCKS")
    registers = []
    for config in namespace["CONFIGS"]:
        proc = subprocess.run(
            ["nvcc", "-arch=sm_90", "-c", "-o", str(tmp_path / "out.o"), str(source), "-Xptxas", "-v",
             *(f"-D{n}={v}" for n, v in zip(names, config, strict=True))],
            capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"\b[1-9]\d* bytes spill", proc.stderr) is None, (config, proc.stderr)
        vec = proc.stderr[proc.stderr.index("'sgemm_warptiling_kernel'"):]
        registers.append(int(re.search(r"Used (\d+) registers", vec).group(1)))
    stated = re.search(r"no spills in any of them\): ([\d, and]+)\.", code.replace("\n# ", " ")).group(1)
    assert [int(r) for r in re.findall(r"\d+", stated)] == registers


# --- step 10: TF32 tensor cores ------------------------------------------------------------------------


def test_tf32_library_turns_tf32_on_for_the_call_and_the_error_model_rounds(monkeypatch):
    a = torch.randn(64, 300, generator=torch.Generator().manual_seed(3))
    b = torch.randn(300, 32, generator=torch.Generator().manual_seed(4))
    rounded = act4_matmul.round_to_tf32(a)
    assert torch.equal(act4_matmul.round_to_tf32(rounded), rounded)
    assert float((rounded - a).abs().div(a.abs()).max()) <= 2.0**-11
    assert torch.equal(rounded.view(torch.int32) & 0x1FFF, torch.zeros_like(rounded, dtype=torch.int32))
    torch.testing.assert_close(act4_matmul.sgemm_tf32_error_model(a, b), act4_matmul.round_to_tf32(a) @ act4_matmul.round_to_tf32(b))
    torch.testing.assert_close(act4_matmul.sgemm_tf32_library(a, b), a @ b)
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0])
    assert torch.equal(act4_matmul.round_to_tf32(special)[:2], special[:2]) and act4_matmul.round_to_tf32(special)[2].isnan()
    matmul = torch.backends.cuda.matmul
    seen = []

    class FakeCuda(torch.Tensor):
        is_cuda = True

    monkeypatch.setattr(torch, "matmul", lambda x, y: seen.append(matmul.fp32_precision) or x @ y)
    previous = matmul.fp32_precision
    try:
        matmul.fp32_precision = "ieee"
        act4_matmul.sgemm_tf32_library(a.as_subclass(FakeCuda), b)
        assert seen == ["tf32"] and matmul.fp32_precision == "ieee"
    finally:
        matmul.fp32_precision = previous


def test_tf32_tolerance_passes_truncation_and_fails_bfloat16_inputs():
    """act4.sgemm_tf32's derived tolerance accepts a kernel that truncates its inputs to TF32 (what a
    tensor core may do with float32 operands) and rejects bfloat16 inputs, at every test size."""
    p = dataclasses.replace(registry.get("act4.sgemm_tf32"), language="python")

    def truncated(A, B):
        t = lambda x: (x.view(torch.int32) & ~0x1FFF).view(torch.float32)  # noqa: E731
        return t(A) @ t(B)

    def bf16_inputs(A, B):
        return A.bfloat16().float() @ B.bfloat16().float()

    for i, size in enumerate(p.test_sizes):
        prepared = checking.prepare_case(p, size, seed=300 + i, device="cpu")
        assert checking.check_case(p, p.library, size, seed=300 + i, device="cpu", prepared=prepared).passed, size
        assert checking.check_case(p, truncated, size, seed=300 + i, device="cpu", prepared=prepared).passed, size
        assert not checking.check_case(p, bf16_inputs, size, seed=300 + i, device="cpu", prepared=prepared).passed, size


def _truncated_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 truncated to TF32's 10 mantissa bits: the farthest a right TF32 kernel's inputs go."""
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


@pytest.mark.parametrize("size", [(1, 2049, 300), (2049, 1, 300)])
def test_tf32_skinny_shapes_get_a_tf32_allowance_when_cublas_runs_them_in_float32(size):
    # On an H200, cuBLAS with TF32 on ran these matrix-vector shapes in plain float32: with that as the
    # library, the allowance comes from the error model (TF32 inputs), so a kernel that truncates its
    # inputs to TF32 passes and one that rounds them to bfloat16 still fails.
    problem = dataclasses.replace(registry.get("act4.sgemm_tf32"), library=act4_matmul.sgemm_library)
    inputs = problem.make_inputs(size, 11, "cpu")
    reference = problem.reference(**inputs)
    a, b = inputs["A"], inputs["B"]
    tol = checking.problem_tolerance(problem, inputs, reference, problem.library(**inputs), torch.float32)
    assert tol.atol >= problem.tolerance_factor * float((act4_matmul.sgemm_tf32_error_model(a, b).double() - reference).abs().max())
    assert tol.library_max_error < tol.atol / 100
    assert checking.compare(_truncated_tf32(a) @ _truncated_tf32(b), reference, tol)[0]
    assert not checking.compare(a.bfloat16().float() @ b.bfloat16().float(), reference, tol)[0]
    # Without the error model the float32 library's error alone fails the truncating kernel (the bug).
    bare = checking.problem_tolerance(dataclasses.replace(problem, error_model=None), inputs, reference, problem.library(**inputs), torch.float32)
    assert not checking.compare(_truncated_tf32(a) @ _truncated_tf32(b), reference, bare)[0]
