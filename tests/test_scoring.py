"""From measurements to points: the speed scale, the floor, honesty and the CPU rules."""

from __future__ import annotations

import copy

import pytest

from autograder import grading, registry, report, verdict

VECTOR_ADD = registry.get("act0.vector_add")
COPY_BW = 3.0e12


def _row(size, fraction, library_ms=None, wrong=0):
    bytes_moved = VECTOR_ADD.bytes_moved(size)
    ms = bytes_moved / (fraction * COPY_BW) * 1e3
    library_ms = library_ms or ms
    return {
        "size": size,
        "candidate": {"median_ms": ms, "stderr_ms": ms / 100, "calls": 20},
        "library": {"median_ms": library_ms, "stderr_ms": library_ms / 100, "calls": 20},
        "bytes_moved": bytes_moved,
        "flops": float(size),
        "floor_ms": bytes_moved / COPY_BW * 1e3,
        "wrong_timed_outputs": wrong,
        "bandwidth": bytes_moved / (ms * 1e-3),
        "library_bandwidth": bytes_moved / (library_ms * 1e-3),
        "ratio": library_ms / ms,
    }


def _result(rows, honest=True):
    return {
        "problem": VECTOR_ADD.name,
        "status": "PASS",
        "cases": [{"size": 1, "passed": True}],
        "speed": rows,
        "honesty": {"ok": honest, "message": "kernels launched: add_kernel" if honest else "library kernel"},
        "ceilings": {"copy": {"bytes_per_s": COPY_BW}, "matmul": {"float32": {"flop_per_s": 5e13}}},
    }


@pytest.mark.parametrize(
    ("fraction", "points"),
    [(0.95, 4.0), (0.75, 4.0), (0.525, 3.0), (0.30, 2.0), (0.10, 2.0)],
)
def test_speed_points_grow_linearly_between_30_and_75_percent(fraction, points):
    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, fraction), _row(1 << 26, fraction)]), "cuda")
    assert result["status"] == "PASS"
    assert result["points"] == pytest.approx(points, abs=0.01)


def test_speed_is_the_geometric_mean_over_sizes():
    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 0.4), _row(1 << 26, 0.9)]), "cuda")
    assert result["speed_metric"]["value"] == pytest.approx(0.6)


def test_a_time_below_the_physical_floor_is_rejected():
    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 1.5), _row(1 << 26, 0.9)]), "cuda")
    assert result["status"] == "REJECT" and result["points"] == 0


def test_wrong_answers_while_timed_fail():
    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 0.9, wrong=3), _row(1 << 26, 0.9)]), "cuda")
    assert result["status"] == "FAIL" and result["points"] == 0
    assert "3 timed calls" in result["message"]


def test_library_kernels_are_rejected():
    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 0.9)], honest=False), "cuda")
    assert result["status"] == "REJECT" and result["points"] == 0


def test_on_cpu_speed_needs_a_gpu():
    result = _result([])
    del result["honesty"]
    scored = verdict.score(VECTOR_ADD, result, "cpu")
    assert scored["points"] == VECTOR_ADD.correctness_points
    assert "needs a GPU" in scored["speed_note"]
    assert scored["max_points_here"] == VECTOR_ADD.correctness_points


def test_cupy_exercises_say_they_need_a_gpu():
    saxpy = registry.get("act0.saxpy")
    result = grading.grade_source(saxpy, "def saxpy(a, x, y):\n    return x\n", "saxpy", device="cpu")
    assert result["status"] == "NEEDS GPU" and result["points"] == 0
    assert "GPU" in result["message"]


def test_failed_correctness_earns_nothing():
    result = _result([_row(1 << 24, 0.9)])
    result["status"] = "FAIL"
    assert verdict.score(VECTOR_ADD, copy.deepcopy(result), "cuda")["points"] == 0


def test_report_shows_physical_units():
    from autograder import report

    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 0.9), _row(1 << 26, 0.9)]), "cuda")
    text = report.text(result)
    assert "GB/s" in text and "of copy bandwidth" in text and "torch.add" in text
    png = report.roofline_png(result)
    assert png and png[:4] == b"\x89PNG"


def test_work_without_flops_sits_on_the_bandwidth_roof():
    transpose = registry.get("act1.transpose")
    size = transpose.bench_sizes[0]
    bytes_moved = transpose.bytes_moved(size)
    ms = bytes_moved / (0.8 * COPY_BW) * 1e3
    row = {
        **_row(1 << 20, 0.8),
        "size": size,
        "candidate": {"median_ms": ms, "stderr_ms": ms / 100, "calls": 20},
        "bytes_moved": bytes_moved,
        "flops": 0.0,
        "floor_ms": bytes_moved / COPY_BW * 1e3,
        "bandwidth": bytes_moved / (ms * 1e-3),
    }
    result = verdict.score(transpose, {**_result([row]), "problem": transpose.name}, "cuda")
    scored = result["speed"][0]
    assert scored["flop_per_s"] == 0.0
    assert scored["roofline_fraction"] == pytest.approx(0.8)
    assert scored["roofline_fraction"] == pytest.approx(scored["copy_fraction"])


def test_work_without_flops_is_plotted_by_its_bandwidth():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from autograder import report

    transpose = registry.get("act1.transpose")
    rows = [{"size": s, "size_label": transpose.size_label(s), "flops": 0.0, "bandwidth": f * COPY_BW, "library_bandwidth": 0.3 * COPY_BW}
            for s, f in zip(transpose.bench_sizes, (0.9, 0.92), strict=True)]
    fig, ax = plt.subplots()
    report._bandwidth_chart(ax, transpose, rows, COPY_BW, transpose.library_name)
    drawn = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    plt.close(fig)
    assert drawn["your kernel"] == pytest.approx([0.9 * COPY_BW / 1e9, 0.92 * COPY_BW / 1e9])
    assert drawn[transpose.library_name] == pytest.approx([0.3 * COPY_BW / 1e9] * 2)
    assert list(drawn[f"copy bandwidth {COPY_BW / 1e9:,.0f} GB/s"]) == pytest.approx([COPY_BW / 1e9] * 2)
    result = {"problem": transpose.name, "speed": [{**r, "intensity": 0.0} for r in rows], "ceilings": {"copy": {"bytes_per_s": COPY_BW}}}
    assert report.roofline_png(result).startswith(b"\x89PNG")


def test_a_correct_kernel_graded_on_a_cpu_has_no_speed_verdict():
    result = verdict.score(VECTOR_ADD, {**_result([]), "device": "cpu"}, "cpu")
    heading = report.text(result, "speed").splitlines()[0]
    assert "NEEDS GPU" in heading and "PASS" not in heading
    assert report.text(result, "correctness").splitlines()[0].split(": ")[1].startswith("PASS")


def test_each_matmul_peak_has_its_own_colour_and_dashes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ceilings = {"copy": {"bytes_per_s": COPY_BW}, "matmul": {d: {"flop_per_s": 7.9e14} for d in ("bfloat16", "float16")} | {"float32": {"flop_per_s": 5e13}}}
    row = {"intensity": 300.0, "flop_per_s": 5e14, "library_flop_per_s": 6e14}
    fig, ax = plt.subplots()
    report._roofline_chart(ax, registry.get("act4.matmul_bf16"), [row], ceilings, "torch.matmul")
    styles = {line.get_label(): (line.get_color(), str(line.get_dashes() if hasattr(line, "get_dashes") else line.get_linestyle())) for line in ax.get_lines() if "peak" in line.get_label()}
    plt.close(fig)
    assert len(styles) == 3 and len(set(styles.values())) == 3
