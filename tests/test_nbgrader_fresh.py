"""The points nbgrader records come only from a fresh grading of the notebook's source: a learner cell
that replaces the grader, or the name `autograder`, earns nothing under a real `nbgrader autograde`,
the solution earns its correctness points on a CPU, and neither `nbgrader validate` (from the course
folder, where nbgrader_config.py enables the plugin) nor `python -m autograder validate` says Success
for a notebook whose code fails. The course and its one autograde run are shared with
test_nbgrader.py (tests/nbgrader_shared.py): submissions "replaced", "solution" and "fake_module"."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from nbgrader_shared import ACT, NBGRADER, NOTEBOOK, run

from autograder import cells, nbgrader_plugin

CORRECTNESS, SPEED = "vector_add_correctness", "vector_add_speed"
SHARED = pytest.mark.xdist_group("nbgrader")


@pytest.fixture
def course(nbgrader_course) -> Path:
    return nbgrader_course


def _recorded(course: Path, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {g: gb.find_grade(g, NOTEBOOK, ACT, student).auto_score for g in (CORRECTNESS, SPEED)}


def _autograded_cells(course: Path, student: str) -> list:
    return json.loads((course / "autograded" / student / ACT / f"{NOTEBOOK}.ipynb").read_text())["cells"]


def _graded_outputs(course: Path, student: str) -> dict:
    out = {}
    for cell in _autograded_cells(course, student):
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in (CORRECTNESS, SPEED):
            out[grade_id] = cell["outputs"]
    return out


def _text(outputs: list) -> str:
    return "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream")


def _result(outputs: list) -> str:
    [result] = [o for o in outputs if o["output_type"] == "execute_result"]
    return "".join(result["data"]["text/plain"])


@SHARED
def test_a_replaced_grader_records_zero(course):
    assert _recorded(course, "replaced") == {CORRECTNESS: 0.0, SPEED: 0.0}
    # The replacement never ran: autograde does not run the notebook's cells (they would run
    # unsandboxed, as the grading user)...
    kernel_output = "".join(_text(c.get("outputs", [])) for c in _autograded_cells(course, "replaced") if c["cell_type"] == "code")
    assert "NBGRADER_EXECUTION in the kernel" not in kernel_output
    # ...and what the graded cells show and return is the fresh grading of the stub.
    outputs = _graded_outputs(course, "replaced")
    assert nbgrader_plugin.HEADING in _text(outputs[CORRECTNESS]) and "NotImplementedError" in _text(outputs[CORRECTNESS])
    assert _result(outputs[CORRECTNESS]) == "0.0"


@SHARED
def test_b_solution_records_full_correctness_and_no_speed_on_a_cpu(course):
    assert _recorded(course, "solution") == {CORRECTNESS: 2.0, SPEED: 0.0}
    outputs = _graded_outputs(course, "solution")
    assert "10 of 10 cases correct" in _text(outputs[CORRECTNESS]) and _result(outputs[CORRECTNESS]) == "2.0"
    assert "needs a GPU" in _text(outputs[SPEED]) and _result(outputs[SPEED]) == "0.0"
    for out in outputs.values():  # the kernel's own (skipped) grading left nothing behind
        assert "graded outside this notebook" not in _text(out)


@SHARED
def test_c_a_fake_autograder_module_records_zero(course):
    assert _recorded(course, "fake_module") == {CORRECTNESS: 0.0, SPEED: 0.0}
    outputs = _graded_outputs(course, "fake_module")
    assert all(_result(out) == "0.0" for out in outputs.values())


@SHARED
def test_nbgrader_validate_does_not_pass_a_replaced_grader(course):
    submitted = course / "submitted" / "replaced" / ACT / f"{NOTEBOOK}.ipynb"
    proc = run([*NBGRADER, "validate", str(submitted)], course)
    out = proc.stdout + proc.stderr
    assert "Success" not in out
    assert "VALIDATION FAILED ON 2 CELL(S)" in out, out


@SHARED
def test_autograder_validate_grades_afresh(course):
    replaced = run([sys.executable, "-m", "autograder", "validate", str(course / "submitted" / "replaced" / ACT / f"{NOTEBOOK}.ipynb")], course)
    assert replaced.returncode == 1 and "Success" not in replaced.stdout, replaced.stdout + replaced.stderr
    assert "VALIDATION FAILED on 1 of 1 exercises" in replaced.stdout and "NotImplementedError" in replaced.stdout
    solution = run([sys.executable, "-m", "autograder", "validate", str(course / "submitted" / "solution" / ACT / f"{NOTEBOOK}.ipynb")], course)
    assert solution.returncode == 0, solution.stdout + solution.stderr
    assert any(line.startswith("Success!") for line in solution.stdout.splitlines()) and "needs a GPU" in solution.stdout


def test_in_kernel_call_grades_nothing_under_autograde(monkeypatch, capsys):
    def must_not_grade(*args, **kwargs):
        raise AssertionError("graded inside the kernel")

    monkeypatch.setattr(cells.grading, "grade_correctness", must_not_grade)
    monkeypatch.setattr(cells.grading, "grade_speed", must_not_grade)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert cells.grade_correctness("act0.vector_add", print) == 0.0
    assert cells.grade_speed("act0.vector_add", print) == 0.0
    assert "graded outside this notebook by the instructor's grader" in capsys.readouterr().out
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    with pytest.raises(AssertionError, match="graded inside the kernel"):
        cells.grade_correctness("act0.vector_add", print)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('autograder.grade_correctness("act0.vector_add", vector_add)', ("act0.vector_add", "vector_add", "correctness")),
        ('# graded\nautograder.grade_speed("act0.vector_add", vector_add)\n', ("act0.vector_add", "vector_add", "speed")),
        ('autograder.grade("act4.softmax", softmax)', ("act4.softmax", "softmax", "all")),
        ("2", None),
        ('autograder.grade_correctness("act0.vector_add", vector_add); 2', None),
        ('x = autograder.grade_correctness("act0.vector_add", vector_add)', None),
        ('ag.grade_correctness("act0.vector_add", vector_add)', None),
        ('autograder.grade_correctness("act0.vector_add", vector_add) + 2', None),
        ('autograder.grade_correctness("act0.vector_add", lambda x, y: x + y)', None),
        ('autograder.grade_correctness(name, vector_add)', None),
        ('autograder.grade_correctness("act0.vector_add", fn=vector_add)', None),
        ('autograder.setup("act0.vector_add", vector_add)', None),
        ("autograder.grade_correctness(", None),
    ],
)
def test_a_graded_cell_is_exactly_one_grader_call(source, expected):
    call = nbgrader_plugin.graded_call(source)
    assert (call and (call.problem, call.entry, call.part)) == expected


def test_a_changed_graded_cell_earns_zero_with_a_sentence():
    import logging

    import nbformat

    def cell(source, solution):
        node = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade": True, "solution": solution, "grade_id": source[:8], "points": 2}})
        node.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
        return node

    changed = cell("2", solution=False)
    # A grader call that the submission re-marked as an answer cell (graded by hand): regraded too.
    flipped = cell('autograder.grade_correctness("act0.no_such_exercise", vector_add)', solution=True)
    answer = cell("x = 1", solution=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def vector_add(x, y):\n    return x + y"), changed, flipped, answer])
    assert nbgrader_plugin.regrade(nb, logging.getLogger(__name__), course_notebook=True) == [1, 2]
    for graded in (changed, flipped):
        assert _result(graded.outputs) == "0.0" and "This graded cell was changed" in _text(graded.outputs)
    assert _result(answer.outputs) == "2"


def test_autograde_never_runs_the_notebook_and_grades_just_before_grades_are_saved():
    from nbgrader.preprocessors import Execute, LimitOutput, SaveAutoGrades

    steps = nbgrader_plugin.autograde_preprocessors()
    at = steps.index(nbgrader_plugin.FreshGrades)
    assert Execute not in steps, "the learner's cells would run outside the sandbox, as the grading user"
    assert steps.index(LimitOutput) < at == steps.index(SaveAutoGrades) - 1
