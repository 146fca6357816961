"""The grader beyond memory-bound vectors: shapes as sizes, ratios to a library as the speed scale,
a FLOP floor from the measured matmul rate, extra baselines in the report, and kernels of the
learner's that carry library-like names."""

from __future__ import annotations

import pytest
import torch

from autograder import benchmark, grading, honesty, registry, report, verdict
from autograder import problem as problem_mod
from autograder.metrics import LIBRARY_RATIO
from autograder.problem import LinearScale, Problem

CEILINGS = {
    "copy": {"bytes_per_s": 4.0e12},
    "matmul": {"float32": {"flop_per_s": 50e12, "n": 4096}, "bfloat16": {"flop_per_s": 800e12, "n": 8192}},
}


def _matmul_problem() -> Problem:
    def make_inputs(size, seed, device):
        m, n, k, dtype = size
        g = torch.Generator(device=device).manual_seed(seed)
        return {"a": torch.randn(m, k, generator=g, device=device).to(getattr(torch, dtype)), "b": torch.randn(k, n, generator=g, device=device).to(getattr(torch, dtype))}

    return Problem(
        name="test.matmul",
        title="A compute-bound test problem",
        notebook="test/matmul",
        function="matmul",
        language="triton",
        make_inputs=make_inputs,
        reference=lambda a, b: a.double() @ b.double(),
        library=lambda a, b: a @ b,
        library_name="torch.matmul",
        bytes_moved=lambda s: 2.0 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]),
        flops=lambda s: 2.0 * s[0] * s[1] * s[2],
        test_sizes=((127, 129, 131, "bfloat16"),),
        bench_sizes=((4096, 4096, 4096, "bfloat16"), (8192, 8192, 8192, "bfloat16")),
        speed_scale=LinearScale(metric=LIBRARY_RATIO, zero_at=0.3, full_at=0.8),
        compute_dtype="bfloat16",
        solution_target=0.95,
        extra_libraries=(("other library", lambda a, b: a @ b),),
    )


@pytest.fixture
def matmul(monkeypatch):
    p = _matmul_problem()
    monkeypatch.setitem(problem_mod._REGISTRY, p.name, p)
    return p


def _row(p, size, tflops, library_tflops, extra_tflops):
    flops = p.flops(size)
    ms = flops / (tflops * 1e12) * 1e3
    library_ms = flops / (library_tflops * 1e12) * 1e3
    extra_ms = flops / (extra_tflops * 1e12) * 1e3
    bytes_moved = p.bytes_moved(size)
    floor_ms = max(bytes_moved / CEILINGS["copy"]["bytes_per_s"], flops / 800e12) * 1e3
    return {
        "size": repr(size),
        "candidate": {"median_ms": ms, "stderr_ms": ms / 100, "calls": 20},
        "library": {"median_ms": library_ms, "stderr_ms": library_ms / 100, "calls": 20},
        "extra_libraries": {"other library": {"median_ms": extra_ms, "stderr_ms": 0.0, "calls": 20}},
        "bytes_moved": bytes_moved,
        "flops": flops,
        "floor_ms": floor_ms,
        "wrong_timed_outputs": 0,
        "bandwidth": bytes_moved / (ms * 1e-3),
        "library_bandwidth": bytes_moved / (library_ms * 1e-3),
        "ratio": library_ms / ms,
    }


def _result(p, rows):
    return {
        "problem": p.name,
        "status": "PASS",
        "cases": [{"size": repr(p.test_sizes[0]), "passed": True}],
        "speed": rows,
        "ceilings": CEILINGS,
        "device_name": "a test GPU",
        "honesty": {"ok": True, "message": "kernels launched: matmul_kernel"},
    }


def test_sizes_print_as_shapes_with_their_options():
    assert problem_mod.format_size(1_000_003) == "1,000,003"
    assert problem_mod.format_size((4096, 8192)) == "4096x8192"
    assert problem_mod.format_size((4, 32, 4096, 128, True)) == "4x32x4096x128 causal"
    assert problem_mod.format_size((4, 32, 4096, 128, False)) == "4x32x4096x128"
    assert problem_mod.format_size((512, 512, 512, "bfloat16")) == "512x512x512 bfloat16"


def test_a_library_ratio_scale_grades_the_geometric_mean_ratio(matmul):
    rows = [_row(matmul, s, 600, 700, 650) for s in matmul.bench_sizes]
    result = verdict.score(matmul, _result(matmul, rows), "cuda")
    assert result["status"] == "PASS"
    assert result["speed_metric"]["value"] == pytest.approx(600 / 700)
    assert result["speed_points"] == pytest.approx(2.0)
    row = result["speed"][0]
    assert row["size_label"] == "4096x4096x4096 bfloat16"
    assert row["extra_libraries"]["other library"]["ratio"] == pytest.approx(600 / 650)
    assert row["flop_per_s"] / row["peak_flop_per_s"] == pytest.approx(600 / 800)


def test_a_time_below_the_flop_floor_is_rejected(matmul):
    rows = [_row(matmul, s, 1200, 700, 650) for s in matmul.bench_sizes]
    result = verdict.score(matmul, _result(matmul, rows), "cuda")
    assert result["status"] == "REJECT"
    assert "physical floor" in result["message"] and result["points"] == 0


def test_the_report_of_a_compute_bound_kernel_is_in_tflops_with_every_baseline(matmul):
    rows = [_row(matmul, s, 600, 700, 650) for s in matmul.bench_sizes]
    scored = verdict.score(matmul, _result(matmul, rows), "cuda")
    text = report.text(scored)
    assert "TFLOP/s" in text and "600.0 TFLOP/s" in text
    assert "of peak" in text and "75%" in text
    assert "other library (ms)" in text and "0.92x" in text
    assert "8192x8192x8192 bfloat16" in text
    assert report.roofline_png(scored) is not None


def test_solution_targets_are_checked_on_the_scale_metric_and_the_library_ratio(matmul, monkeypatch):
    assert matmul.solution_shortfalls({"ratio": 0.97}) == []
    assert "0.90x torch.matmul, target 0.95x" in matmul.solution_shortfalls({"ratio": 0.90})[0]
    reduction = registry.get("act0.vector_add")
    monkeypatch.setattr(reduction, "solution_library_ratio", 1.0)
    assert reduction.solution_shortfalls({"copy_fraction": 0.95, "ratio": 1.01}) == []
    # Level with the library within LEVEL_BAND counts as "at least as fast"; slower than that does not.
    assert reduction.solution_shortfalls({"copy_fraction": 0.95, "ratio": 0.99}) == []
    missed = reduction.solution_shortfalls({"copy_fraction": 0.80, "ratio": 0.97})
    assert len(missed) == 2 and "80.0% of copy bandwidth, target 90%" in missed[0] and "0.97x" in missed[1]
    assert "level within 2%" in missed[1]


def test_the_benchmark_table_marks_a_missed_target(matmul):
    rows = [_row(matmul, s, 600, 700, 650) for s in matmul.bench_sizes]
    result = verdict.score(matmul, _result(matmul, rows), "cuda")
    meta = {"device_name": "a test GPU", "date": "2026-11-22", "versions": {}, "copy_bandwidth": 4.0e12}
    table = benchmark._markdown("test", [result], meta)
    assert "600.0 TFLOP/s" in table and "75.0% of matmul peak" in table
    assert "no: 0.86x torch.matmul, target 0.95x" in table
    assert "other library" in table


def test_the_roofline_grid_contains_every_ridge_point_and_every_measured_point():
    grid = report.roofline_grid(CEILINGS, [1 / 12, 3000.0])
    assert 50e12 / 4.0e12 in grid and 800e12 / 4.0e12 in grid
    assert grid[0] < 1 / 12 and grid[-1] > 3000.0


def test_kernels_the_learner_defines_are_theirs_even_with_library_like_names():
    code = '''
import triton

@triton.autotune(configs=[], key=["n"])
@triton.jit
def flash_attention_kernel(q_ptr, n):
    pass

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256) sgemm_vectorized(const float* a) {}
extern "C" __global__ void nvjet_hsh_256x128(const float* a) {}
extern "C" __global__ void cupy_sum(const float* a) {}
"""
'''
    own = honesty.own_kernel_names(code, "cuda")
    # A declared kernel with a library's name is not taken as the learner's: CuPy's own kernels
    # (cupy.sum without CUB runs one named cupy_sum) are as plain as a learner's. On a GPU a Triton
    # kernel of theirs runs under the name the worker compiled it with.
    assert own == {"flash_attention_kernel" + honesty.OWN_MARK, "sgemm_vectorized"}
    assert honesty.own_kernel_names(code) == {"flash_attention_kernel", "sgemm_vectorized"}

    def judged(kernels, own_names=frozenset()):
        return honesty.judge_gpu({"calls": {"kernels": [{"name": k, "calls": 1, "total_us": 100.0} for k in kernels]}}, set(own_names), (), {})["ok"]

    assert judged(["flash_attention_kernel" + honesty.OWN_MARK], own)
    assert judged(["_Z16sgemm_vectorizedPKf"], own)
    assert judged(["sgemm_vectorized(float const*)"], own)
    # Not defined by the learner: the same names are library kernels; so is a Triton kernel of their
    # kernel's name compiled from another file.
    assert not judged(["flash_attention_kernel"])
    assert not judged(["flash_attention_kernel"], own)
    # A library kernel stays a library kernel even when the learner declares one of a similar name.
    assert not judged(["nvjet_hsh_256x128_64x4_1x2_h_bz_coopB_NNT"], own)
    assert not judged(["cupy_sum"], own)
    assert not judged(["sgemm_vectorized", "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(Params)"], own)


def test_the_benchmark_builds_its_tables_from_recorded_gradings(tmp_path, monkeypatch):
    from pathlib import Path

    vector_add = registry.get("act0.vector_add")
    n = vector_add.bench_sizes[0]
    ms = vector_add.bytes_moved(n) / (0.95 * 4.0e12) * 1e3
    row = {
        "size": n,
        "candidate": {"median_ms": ms, "stderr_ms": ms / 100, "calls": 20},
        "library": {"median_ms": ms, "stderr_ms": ms / 100, "calls": 20},
        "bytes_moved": vector_add.bytes_moved(n),
        "flops": vector_add.flops(n),
        "floor_ms": vector_add.bytes_moved(n) / 4.0e12 * 1e3,
        "wrong_timed_outputs": 0,
        "bandwidth": vector_add.bytes_moved(n) / (ms * 1e-3),
        "library_bandwidth": vector_add.bytes_moved(n) / (ms * 1e-3),
        "ratio": 1.0,
    }
    result = {"problem": vector_add.name, "status": "PASS", "cases": [{"size": 1, "passed": True}], "speed": [row], "ceilings": CEILINGS,
              "device_name": "a test GPU", "versions": {"python": "3.12"}, "honesty": {"ok": True, "message": "kernels launched: add_kernel"}}
    recorded = tmp_path / "graded"
    monkeypatch.setenv(grading.RESULTS_DIR_VARIABLE, str(recorded))
    grading._record(verdict.score(vector_add, result, "cuda"))
    out = tmp_path / "results"
    root = Path(__file__).resolve().parent.parent
    assert benchmark.run(root / "solutions", out, recorded) == 1  # the other exercises have no recorded grading
    table = (out / "act0.md").read_text()
    assert "a test GPU" in table
    assert "| `act0.vector_add` | 33,554,432 |" in table and "95.0% of copy" in table and "| yes |" in table
    assert "no graded result was recorded" in table
    assert (out / "bench-a-test-gpu.json").exists() and (out / "act0.vector_add-roofline.png").exists()


def test_a_problem_with_operations_of_several_dtypes_gets_each_ones_ceiling(monkeypatch):
    """Act 2's measured points hold a bfloat16 matmul against the bfloat16 rate, not float32's (it
    read 1428% of its roof against the float32 rate on an H200)."""
    import types

    from autograder import ceilings

    measured = []
    monkeypatch.setattr(ceilings, "measure_copy_bandwidth", lambda: {"bytes_per_s": 4e12})
    monkeypatch.setattr(ceilings, "measure_matmul", lambda dtype, n, tf32=False: measured.append((dtype, tf32)) or {"flop_per_s": 1.0, "n": n})
    monkeypatch.setattr(ceilings, "device_key", lambda: "test")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: types.SimpleNamespace(name="test", major=9, minor=0))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    problem = registry.get("act2.measure_point")
    entry = ceilings.measure_for(problem.compute_dtype, *problem.ceiling_dtypes)
    assert set(entry["matmul"]) == {"float32", "bfloat16"}
    assert measured == [(torch.float32, False), (torch.bfloat16, False)]
    old = types.SimpleNamespace(name="T4", major=7, minor=5)
    assert ceilings._runnable("bfloat16", old) == "float16" and ceilings._runnable("tf32", old) == "float32"


def test_doctor_measures_each_dtype_a_gpu_runs_as_itself(monkeypatch):
    import types

    from autograder import ceilings

    monkeypatch.setattr(ceilings, "measure_copy_bandwidth", lambda: {"bytes_per_s": 4e12})
    monkeypatch.setattr(ceilings, "measure_streams", lambda: {})
    monkeypatch.setattr(ceilings, "measure_matmul", lambda dtype, n, tf32=False: {"flop_per_s": 1.0, "n": n})
    monkeypatch.setattr(ceilings, "measure_fp8_matmul", lambda n: {"flop_per_s": 2.0, "n": n})
    monkeypatch.setattr(ceilings, "device_key", lambda: "test")
    for props, dtypes, half_n in (
        (types.SimpleNamespace(name="H100", major=9, minor=0), ["float32", "tf32", "bfloat16", "float16", "float8_e4m3fn"], 8192),
        (types.SimpleNamespace(name="T4", major=7, minor=5), ["float32", "float16"], 4096),
    ):
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _, props=props: props)
        matmul = ceilings.measure()["matmul"]
        assert list(matmul) == dtypes and matmul["float16"]["n"] == half_n and matmul["float32"]["n"] == 4096
