"""Exercises graded against the grader's own measurement. Here the operations are CPU sleeps of
known length (timing real CPU arithmetic on a shared 2-core machine is too noisy to test against),
judged by the real judges; the GPU run grades the same functions on the GPU operations."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from autograder import grading, measured, registry

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "act2-rooflines" / "roofline_model.ipynb"
# A made-up CPU: 100 GFLOP/s, 10 GB/s, ridge at 10 FLOP/B (only the classification uses it).
CPU_CEILINGS = {"copy": {"bytes_per_s": 1e10}, "matmul": {"float32": {"flop_per_s": 1e11}}}


def _sleep(ms: float):
    return lambda: time.sleep(ms * 1e-3)


def _point_ops(device):
    return [
        measured.MeasuredOp("memory-bound, 5 ms", _sleep(5), flops=1e6, bytes_moved=1e7),
        measured.MeasuredOp("compute-bound, 8 ms", _sleep(8), flops=1e9, bytes_moved=1e6),
    ]


def _regime_ops(device):
    return [
        measured.MeasuredOp("launch-bound", _sleep(3), doubled=_sleep(3), flops=1e3, bytes_moved=1e4),
        measured.MeasuredOp("memory-bound", _sleep(5), doubled=_sleep(10), flops=1e6, bytes_moved=1e7),
        measured.MeasuredOp("compute-bound", _sleep(5), doubled=_sleep(10), flops=1e9, bytes_moved=1e6),
    ]


POINT = dataclasses.replace(registry.get("act2.measure_point"), make_ops=_point_ops)
REGIME = dataclasses.replace(registry.get("act2.classify_op"), make_ops=_regime_ops)


@pytest.fixture(scope="module")
def solution() -> dict:
    """The reference solution's functions, from the solution notebook's own cells."""
    namespace: dict = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("solution"):
            exec("".join(cell["source"]), namespace)
    return namespace


def _verdicts(problem, fn) -> list[dict]:
    return measured.check(problem, fn, "cpu", CPU_CEILINGS)


def test_the_reference_solution_agrees_with_the_grader(solution):
    for problem, fn in ((POINT, solution["measure_point"]), (REGIME, solution["classify_op"])):
        cases = _verdicts(problem, fn)
        assert len(cases) >= 2
        assert all(c["passed"] for c in cases), cases


def test_the_operations_cover_every_regime():
    # Timed on a CPU that other tests share: a neighbour's load can blur one measurement (a doubled
    # compute-bound call that takes 1.3x), so the grader's own reading gets three tries.
    for _ in range(3):
        cases = _verdicts(REGIME, lambda *args: "none of them")
        assert not any(c["passed"] for c in cases)
        said = {c["message"].split("says ")[1].split(" ")[0] for c in cases}
        if said == {"'overhead'", "'memory'", "'compute'"}:
            return
    assert said == {"'overhead'", "'memory'", "'compute'"}, cases


def test_a_time_ten_times_off_fails(solution):
    def summed_not_median(op, flops, bytes_moved, peak_flops, bandwidth):
        seconds = 10 * solution["time_op"](op)
        return dict(solution["roofline_point"](flops, bytes_moved, seconds, peak_flops, bandwidth), seconds=seconds)

    cases = _verdicts(POINT, summed_not_median)
    assert not any(c["passed"] for c in cases)
    assert "the grader measured" in cases[0]["message"]


def test_a_point_inconsistent_with_its_own_time_fails(solution):
    def wrong_roof(op, flops, bytes_moved, peak_flops, bandwidth):
        point = solution["measure_point"](op, flops, bytes_moved, peak_flops, bandwidth)
        point["attainable_flops"] = peak_flops
        return point

    cases = _verdicts(POINT, wrong_roof)
    assert not all(c["passed"] for c in cases)
    assert any("attainable_flops" in c["message"] for c in cases)


def test_timing_only_the_undoubled_operation_calls_everything_overhead(solution):
    def lazy(op, op_doubled, flops, bytes_moved, peak_flops, bandwidth):
        seconds = solution["time_op"](op)
        return solution["classify_regime"](flops, bytes_moved, seconds, seconds, peak_flops, bandwidth)

    cases = _verdicts(REGIME, lazy)
    assert sum(c["passed"] for c in cases) == 1, cases


def test_an_exception_fails_that_operation_only():
    cases = _verdicts(POINT, lambda *args: 1 / 0)
    assert all("ZeroDivisionError" in c["message"] for c in cases)


def test_the_real_operations_carry_their_costs_and_doubles():
    for name in ("act2.measure_point", "act2.classify_op"):
        for op in registry.get(name).make_ops("cpu"):
            assert op.flops > 0 and op.bytes_moved > 0 and callable(op.call)
            assert (op.doubled is not None) == (name == "act2.classify_op")
            op.call()


def test_on_a_cpu_machine_the_grade_says_it_needs_a_gpu(solution):
    result = grading.grade_source(registry.get("act2.measure_point"), "def measure_point(op, flops, bytes_moved, peak_flops, bandwidth):\n    return {}\n", "measure_point", device="cpu")
    assert result["status"] == "NEEDS GPU" and result["points"] == 0
    assert "grader's own measurement" in result["message"]


def test_a_measurement_judged_right_keeps_what_the_grader_measured():
    """The judge's case for a right measurement says what the grader found beside it (the GPU run's log
    reads the regimes from it); a wrong one says what disagrees."""
    from autograder import answers, jsonable

    def judge(got, *_):
        return (got == 2.0, "idle 3%, memory (grader: idle 2%, memory)" if got == 2.0 else "you said 1.0")

    problem = dataclasses.replace(REGIME, judge=judge)
    right = answers.answer_case({"answer": jsonable.encode(2.0)}, "op", lambda got: answers.measured_verdict(problem, got, None, 0, 0, ""))
    wrong = answers.answer_case({"answer": jsonable.encode(1.0)}, "op", lambda got: answers.measured_verdict(problem, got, None, 0, 0, ""))
    assert right.passed and right.message == "idle 3%, memory (grader: idle 2%, memory)"
    assert not wrong.passed and wrong.message == "you said 1.0"
