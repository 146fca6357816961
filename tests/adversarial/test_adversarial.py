"""Every adversarial submission gets its verdict: on the CPU under the Triton interpreter in CI, and
on a GPU in the GPU run."""

from __future__ import annotations

import pytest

from autograder import grading
from autograder import problem as problem_mod

from .cases import cases


def _grade(case, device):
    problem = problem_mod.get(case.problem)
    return grading.grade_source(problem, case.source, case.entry, device=device, timeout=case.timeout)


def _explain(result) -> str:
    return f"{result['status']}: {result.get('message')}\n{result.get('traceback', '')}\n{(result.get('output') or '')[-1500:]}"


@pytest.mark.parametrize("case", cases("cpu"), ids=lambda c: c.name)
def test_verdict_on_cpu(case):
    result = _grade(case, "cpu")
    assert result["status"] in case.expect, _explain(result)
    if "PASS" not in case.expect:
        assert result["points"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("case", cases("cuda"), ids=lambda c: c.name)
def test_verdict_on_gpu(case):
    result = _grade(case, "cuda")
    assert result["status"] in case.expect, _explain(result)
    if "PASS" not in case.expect:
        assert result["points"] == 0
    else:
        # Honest submissions are timed honestly: never below the physical floor.
        assert all(not row["below_floor"] for row in result["speed"]), result["speed"]


def test_flooded_output_is_truncated():
    case = next(c for c in cases("cpu") if c.name == "floods_output")
    result = _grade(case, "cpu")
    assert result["status"] == "PASS"
    assert len(result["output"]) < 10_000
    assert "bytes of output left out" in result["output"]


@pytest.mark.gpu
def test_crash_does_not_cost_the_next_exercise():
    crash = next(c for c in cases("cuda") if c.name == "illegal_address")
    honest = next(c for c in cases("cuda") if c.name == "honest_cupy")
    assert _grade(crash, "cuda")["status"] == "ERROR"
    result = _grade(honest, "cuda")
    assert result["status"] == "PASS", _explain(result)
    assert result["correctness_points"] == problem_mod.get("act0.saxpy").correctness_points
    assert len(result["speed"]) == len(problem_mod.get("act0.saxpy").bench_sizes)
