"""On a GPU: Act 3's exercises that the grader times or profiles itself reach their targets with
the reference solutions (the notebook tests check full marks; these check the solution targets and
print what was measured, for the run's log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder import grading, registry, source

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = pytest.mark.gpu


def _grade_solution(name: str) -> dict:
    problem = registry.get(name)
    cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
    return grading.grade_source(problem, source.extract(cells, problem.function, getattr(problem, "also_needs", ())), problem.function, "cuda", True)


def test_the_cuda_graph_solution_reaches_its_target():
    problem = registry.get("act3.cuda_graph")
    result = _grade_solution(problem.name)
    assert result["status"] == "PASS", result
    print(result["speed_note"])
    assert result["graph"]["ratio"] >= problem.solution_target, result["speed_note"]


def test_the_trace_reading_solution_agrees_with_the_graders_profiles():
    result = _grade_solution("act3.read_trace")
    for case in result["cases"]:
        print(case["size"], "->", case["message"])
    assert result["status"] == "PASS", result
    regimes = {case["message"].split(", ")[1].split(" ")[0] for case in result["cases"]}
    assert regimes == {"overhead", "memory", "compute"}, result["cases"]
