"""Act 1: the exact 1.5 exercises graded fully on the CPU, the CuPy exercises' problem definitions
(their awkward shapes, their tolerances and their proof that wrong answers fail, checked with torch
stand-ins) and the CuPy exercises' answer on a machine without a GPU."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from autograder import checking, exact, grading, metrics, registry
from autograder.problem import is_exact
from autograder.problems.act1 import gpu_specs as act1

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "act1-hierarchy"
# Act 1's exercises as the registry has them: a new one is tested without editing this file.
ACT1 = [p for p in registry.all_problems() if p.name.startswith("act1.")]
CUPY = [p.name for p in ACT1 if p.language == "cupy"]
EXACT = [p.name for p in ACT1 if is_exact(p)]


def test_act1_has_its_exercises():
    assert set(CUPY) >= {"act1.indexing_2d", "act1.transpose", "act1.reduction"}
    assert set(EXACT) >= {"act1.peak_rates", "act1.ridge_points", "act1.time_bounds"}


# --- 1.5: exact, pure Python -----------------------------------------------------------------------


def test_spec_table_reproduces_the_datasheet_peaks():
    """The spec-table inputs give back the datasheet numbers the book quotes (dense, no sparsity)."""
    a100 = act1.peak_rates(**act1.SPEC_TABLE["A100"])
    assert a100["flops"]["fp32"] == pytest.approx(19.5e12, rel=0.01)
    assert a100["flops"]["tf32"] == pytest.approx(156e12, rel=0.01)
    assert a100["flops"]["bf16"] == pytest.approx(312e12, rel=0.01)
    assert a100["bandwidth"] == pytest.approx(1555e9, rel=0.001)
    t4 = act1.peak_rates(**act1.SPEC_TABLE["T4"])
    assert t4["flops"]["fp32"] == pytest.approx(8.1e12, rel=0.01)
    assert t4["flops"]["fp16"] == pytest.approx(65e12, rel=0.01)
    assert t4["bandwidth"] == pytest.approx(320e9)
    h100 = act1.peak_rates(**act1.SPEC_TABLE["H100"])
    assert h100["flops"]["bf16"] == pytest.approx(989.4e12, rel=0.001)
    assert h100["flops"]["fp8"] == pytest.approx(1978.9e12, rel=0.001)
    assert h100["bandwidth"] == pytest.approx(3.35e12, rel=0.001)
    h200 = act1.peak_rates(**act1.SPEC_TABLE["H200"])
    assert h200["flops"] == h100["flops"] and h200["bandwidth"] == pytest.approx(4.8e12)
    b200 = act1.peak_rates(**act1.SPEC_TABLE["B200"])
    assert b200["flops"]["bf16"] == pytest.approx(2.25e15, rel=0.01)
    assert b200["bandwidth"] == pytest.approx(8e12)


def test_hand_checked_ridge_points_and_bounds():
    toy = dict(sms=1, clock_ghz=1.0, flops_per_clock_per_sm={"fp32": 2}, bus_width_bits=8, data_rate_gbps=1.0)
    assert act1.peak_rates(**toy) == {"flops": {"fp32": 2e9}, "bandwidth": 1e9}
    assert act1.ridge_points(**toy) == {"fp32": 2.0}
    assert act1.ridge_points(**act1.SPEC_TABLE["A100"])["bf16"] == pytest.approx(200.5, rel=1e-3)
    bounds = act1.time_bounds(250e9, 1e9, "bf16", {k: act1.SPEC_TABLE[k] for k in ("A100", "H100", "H200", "B200")})
    assert {k: v["bound"] for k, v in bounds.items()} == {"A100": "compute", "H100": "memory", "H200": "compute", "B200": "memory"}
    assert bounds["H100"]["seconds"] == pytest.approx(1e9 / 3.34976e12)
    # Exactly at the ridge point counts as compute-bound, as in Act 2.
    at_ridge = act1.time_bounds(4e9, 2e9, "fp32", {"toy": toy})
    assert at_ridge == {"toy": {"seconds": 2.0, "bound": "compute"}}


def _solution_code(notebook: str) -> str:
    cells = json.loads((SOLUTIONS / notebook).read_text())["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code" and c["metadata"]["nbgrader"].get("solution"))


@pytest.mark.parametrize("name", EXACT)
def test_the_solution_notebook_earns_full_marks_on_cpu(name):
    problem = registry.get(name)
    result = grading.grade_source(problem, _solution_code(f"{problem.notebook.split('/')[-1]}.ipynb"), problem.function, device="cpu")
    assert result["status"] == "PASS", result
    assert result["points"] == problem.max_points


@pytest.mark.parametrize("name", EXACT)
def test_common_mistakes_fail(name):
    problem = registry.get(name)
    # Bandwidth in bits per second (forgetting the / 8), and the clock taken as Hz instead of GHz.

    def bits(**spec):
        return {**spec, "bus_width_bits": spec["bus_width_bits"] * 8}

    def ghz(**spec):
        return {**spec, "clock_ghz": spec["clock_ghz"] / 1e9}

    for mistake in (bits, ghz):
        if name == "act1.time_bounds":

            def wrong(flops, bytes_moved, dtype, gpus, mistake=mistake):
                return act1.time_bounds(flops, bytes_moved, dtype, {k: mistake(**v) for k, v in gpus.items()})
        else:

            def wrong(mistake=mistake, **spec):
                return problem.reference(**mistake(**spec))

        cases = exact.check_cases(problem, wrong, seed=2024)
        assert not all(c["passed"] for c in cases), f"{mistake.__name__} passed {name}"


def test_time_bounds_checks_the_bound_not_only_the_seconds():
    problem = registry.get("act1.time_bounds")

    def always_memory(flops, bytes_moved, dtype, gpus):
        return {name: {**v, "bound": "memory"} for name, v in act1.time_bounds(flops, bytes_moved, dtype, gpus).items()}

    cases = exact.check_cases(problem, always_memory, seed=5)
    assert not all(c["passed"] for c in cases)


# --- The CuPy exercises' problem definitions, checked with torch stand-ins -----------------------


def _as_torch(name):
    """The same problem with torch in and out, so its checks run without CuPy or a GPU."""
    return dataclasses.replace(registry.get(name), language="python")


def _check(p, fn, size, seed=11, prepared=None):
    return checking.check_case(p, fn, size, seed=seed, device="cpu", prepared=prepared)


@pytest.mark.parametrize("name", CUPY)
def test_cupy_exercises_say_they_need_a_gpu(name):
    problem = registry.get(name)
    result = grading.grade_source(problem, f"def {problem.function}(*args):\n    return args[0]\n", problem.function, device="cpu")
    assert result["status"] == "NEEDS GPU" and result["points"] == 0




@pytest.mark.parametrize("name", CUPY)
def test_targets_and_scales(name):
    p = registry.get(name)
    assert p.speed_scale.metric is metrics.COPY_FRACTION
    assert (p.speed_scale.zero_at, p.speed_scale.full_at) == (0.30, 0.70)
    assert p.solution_target == 0.85
    assert p.solution_library_ratio == (1.0 if name == "act1.reduction" else None)


def _first_tensor(args):
    return next(a for a in args if isinstance(a, torch.Tensor))


def _wrong_answers(p):
    """Zeros and a constant of the right shape, the input itself, and another seed's answer."""

    def right_shape(args):
        return p.reference(*args).shape

    def other_seed_for(size):
        def other(*args):
            return p.library(**p.make_inputs(size, 987654321, "cpu"))

        return other

    return {
        "zeros": lambda size: lambda *a: torch.zeros(right_shape(a), dtype=torch.float32),
        "constant": lambda size: lambda *a: torch.full(right_shape(a), 1.0),
        "input itself": lambda size: lambda *a: _first_tensor(a).clone(),
        "another seed's answer": other_seed_for,
    }


@pytest.mark.parametrize("name", CUPY)
def test_the_library_passes_and_wrong_answers_fail_at_every_test_size(name):
    """At every test size the library passes, and zeros, a constant, the input itself and another
    seed's answer fail (but at the one-element sizes), all against one case: one float64 reference."""
    p = _as_torch(name)
    passed_wrong = []
    for i, size in enumerate(p.test_sizes):
        case = checking.prepare_case(p, size, seed=7 + i, device="cpu")
        assert _check(p, p.library, size, seed=7 + i, prepared=case).passed, (name, size)
        if size in ((1, 1, 1), (1, 1, 7), (1, 1), 1):
            continue
        for wrong, make in _wrong_answers(p).items():
            if _check(p, make(size), size, seed=7 + i, prepared=case).passed:
                passed_wrong.append(f"{wrong} at {size}")
    assert not passed_wrong, f"wrong answers passed for {name}: {passed_wrong}"


INDEXING = _as_torch("act1.indexing_2d")
TRANSPOSE = _as_torch("act1.transpose")
REDUCTION = _as_torch("act1.reduction")


def test_indexing_inputs_are_pitched_views():
    x = INDEXING.make_inputs((1823, 781, 800), 3, "cpu")["x"]
    assert x.shape == (1823, 781) and x.stride() == (800, 1)
    assert INDEXING.make_inputs((127, 129, 129), 3, "cpu")["x"].is_contiguous()
    assert INDEXING.size_label((1823, 781, 800)) == "1823x781 (row pitch 800)"


def test_indexing_that_ignores_the_pitch_fails():
    def contiguous_rows(x, row_scale, col_shift):
        rows, cols = x.shape
        flat = x.as_strided((rows * cols,), (1,))  # reads x as if its rows were cols floats apart
        return row_scale[:, None] * flat.view(rows, cols) + col_shift[None, :]

    assert _check(INDEXING, contiguous_rows, (127, 129, 129)).passed
    assert not _check(INDEXING, contiguous_rows, (1823, 781, 800)).passed


def test_indexing_with_rows_and_columns_swapped_fails():
    def swapped(x, row_scale, col_shift):
        return col_shift[None, :] * x + row_scale[:, None] if x.shape[0] == x.shape[1] else row_scale[:, None] * x + col_shift[None, :] * 0

    assert not _check(INDEXING, swapped, (1823, 781, 781)).passed


def _without_the_edge_tiles(out: torch.Tensor) -> torch.Tensor:
    """What a tiled kernel with no edge masks but a rounded-down grid leaves: the last partial tile
    row and column of the output unwritten (here: zero)."""
    out = out.clone()
    rows, cols = out.shape
    out[rows - rows % 32 :, :] = 0
    out[:, cols - cols % 32 :] = 0
    return out


def test_transpose_missing_the_edge_tiles_fails():
    def rounded_down(x):
        return _without_the_edge_tiles(x.t().contiguous())

    assert _check(TRANSPOSE, rounded_down, (1024, 1024)).passed  # multiples of the tile hide it
    for size in ((127, 129), (1823, 781), (1, 4097), (4097, 1)):
        assert not _check(TRANSPOSE, rounded_down, size).passed, size


def test_transpose_that_returns_a_view_fails():
    case = _check(TRANSPOSE, lambda x: x.t(), (127, 129))
    assert not case.passed and ("contiguous" in case.message or "shares memory" in case.message)


def test_reduction_tolerance_is_tight_enough_to_catch_half_precision():
    def half(x):
        return x.half().sum(dtype=torch.float16).float()

    assert not _check(REDUCTION, half, 1_000_003).passed
    # bfloat16 inputs summed in float32 lose 16 bits of every element: caught too.
    assert not _check(REDUCTION, lambda x: x.bfloat16().float().sum(), 65_537).passed


def test_reduction_passes_with_blocked_float32_partials():
    """The reference kernel's order of additions (per-thread float32 sums, one partial per block,
    the partials added at the end) stays well inside the derived tolerance."""

    def blocked(x):
        n = x.numel()
        threads = 4 * 512 * 8
        padded = torch.zeros(-(-n // threads) * threads)
        padded[:n] = x
        per_thread = padded.view(-1, threads).sum(0)  # each column: one thread's running sum
        return per_thread.view(-1, 512).sum(1).sum()

    for size in (1, 1023, 65_537, 1_000_003, (1 << 22) + 3):
        case = _check(REDUCTION, blocked, size, seed=size % 97)
        assert case.passed, case
        assert case.max_error < 0.25 * case.allowed_error, case


def test_reduction_inputs_have_a_nonzero_mean():
    for seed in (1, 2, 3, 4):
        x = REDUCTION.make_inputs(1 << 16, seed, "cpu")["x"]
        assert abs(float(x.double().mean())) > 0.2
    signs = {float(REDUCTION.make_inputs(4096, s, "cpu")["x"].sum()) > 0 for s in range(6)}
    assert signs == {True, False}


def test_reduction_returns_a_scalar():
    case = _check(REDUCTION, lambda x: x.sum().reshape(1), 1025)
    assert not case.passed and "shape" in case.message


def test_bench_sizes_are_far_beyond_l2_and_fit_a_t4():
    for name in CUPY:
        p = registry.get(name)
        for size in p.bench_sizes:
            assert 256e6 <= p.bytes_moved(size) <= 8e9, (name, size)


# --- The CUDA sources compile (where nvcc is installed; the kernels themselves need a GPU) --------

SOURCES = {
    "indexing_2d.ipynb": ["SCALE_SHIFT_2D_SOURCE"],
    "transpose.ipynb": ["TRANSPOSE_NAIVE_SOURCE", "TRANSPOSE_SOURCE"],
    "reduction.ipynb": ["REDUCE_SUM_SOURCE"],
}


@pytest.mark.parametrize("notebook", sorted(SOURCES))
def test_solution_kernels_compile_with_nvcc(notebook, tmp_path):
    import shutil
    import subprocess

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed here")
    namespace: dict = {}
    code = _solution_code(notebook)
    # Only the source strings: the rest of the cells needs CuPy and a GPU.
    for name in SOURCES[notebook]:
        start = code.index(f'{name} = r"""')
        end = code.index('"""', start + len(name) + 8) + 3
        exec(code[start:end], namespace)  # noqa: S102 -- the project's own solution cells
        source = tmp_path / f"{name}.cu"
        source.write_text(namespace[name])
        done = subprocess.run([nvcc, "-arch=sm_80", "-c", "-o", str(tmp_path / "out.o"), "-x", "cu", str(source)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
