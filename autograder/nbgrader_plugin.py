"""nbgrader's grades from a fresh grading of the notebook's source, never from its kernel.

A graded cell runs in the learner's own kernel, where any earlier cell can replace
``autograder.grade_correctness``, the name ``autograder`` or the package on disk. So the points nbgrader
records are recomputed here, from the notebook's source, in fresh processes (the grading of
``python -m autograder grade``), and written over each graded cell's outputs: the report on stdout
and the points as the cell's result. A graded cell that is not exactly one grader call earns zero.

- ``FreshGrades``: a preprocessor for ``nbgrader autograde``; ``autograde_preprocessors`` puts it
  after the notebook has run (and after the steps that filter or trim outputs) and before
  ``SaveAutoGrades``, the step that reads the grades.
- ``fresh_grades_for_validate``: an ``Execute.on_notebook_start`` hook for ``nbgrader validate``,
  whose preprocessors cannot be configured: before any cell runs it writes the fresh grades into the
  graded cells and tags them so that the kernel skips them.
"""

from __future__ import annotations

import ast
import base64
import os
from dataclasses import dataclass

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.converters import Autograde
from nbgrader.preprocessors import NbGraderPreprocessor, SaveAutoGrades

from . import grading, registry, report, source, verdict
from .notebooks import grade_exercise

PARTS = {"grade": ("all", "points"), "grade_correctness": ("correctness", "correctness_points"), "grade_speed": ("speed", "speed_points")}
HEADING = "Graded by the instructor's grader from this notebook's source, in a fresh process; nothing run in the notebook's kernel counts."
CHANGED = (
    "This graded cell was changed: a graded cell of this course is exactly one call such as "
    '`autograder.grade_correctness("act0.vector_add", vector_add)`, so it earns 0 points.'
)
# nbclient skips cells with this tag (NotebookClient.skip_cells_with_tag, left at its default).
SKIP_TAG = "skip-execution"


@dataclass(frozen=True)
class GradedCall:
    problem: str
    entry: str
    part: str
    points_key: str


def graded_call(cell_source: str) -> GradedCall | None:
    """The one call ``autograder.<grade|grade_correctness|grade_speed>("<problem>", <function>)``
    that a graded cell consists of (comments aside), or None for anything else."""
    try:
        tree = ast.parse(cell_source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in PARTS):
        return None
    if not (isinstance(call.func.value, ast.Name) and call.func.value.id == "autograder"):
        return None
    if call.keywords or len(call.args) != 2:
        return None
    name, fn = call.args
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and isinstance(fn, ast.Name)):
        return None
    return GradedCall(name.value, fn.id, *PARTS[call.func.attr])


def _graded(cell) -> bool:
    """A graded code cell. nbgrader does not restore a graded cell's `solution` flag, which turns it
    into a cell graded by hand; such a cell is still regraded when it is a grader call (no real
    answer cell is), so whoever grades it by hand never sees what the kernel printed."""
    if cell.cell_type != "code" or not utils.is_grade(cell):
        return False
    return not utils.is_solution(cell) or graded_call(cell.source) is not None


def _outputs(cell, text: str, points: float, png: bytes | None = None) -> list:
    outputs = [new_output("stream", name="stdout", text=text.rstrip("\n") + "\n")]
    if png:
        outputs.append(new_output("display_data", data={"image/png": base64.b64encode(png).decode("ascii")}))
    outputs.append(new_output("execute_result", data={"text/plain": repr(float(points))}, execution_count=cell.get("execution_count")))
    return outputs


def _roofline(result: dict, call: GradedCall, log) -> bytes | None:
    if call.part == "correctness":
        return None
    try:
        return report.roofline_png(result)
    except Exception:  # noqa: BLE001 -- the plot is a courtesy; the points and the report stand without it
        log.exception("no roofline plot for %s", call.problem)
        return None


def _grade(call: GradedCall, cells: list[str], device: str, log) -> dict | None:
    try:
        problem = registry.get(call.problem)
    except KeyError:
        return None
    try:
        return grade_exercise(problem, cells, call.entry, device, speed=True)
    except Exception as exc:  # noqa: BLE001 -- a grader failure costs this exercise, never the whole notebook
        log.exception("grading %s failed", call.problem)
        return verdict.score(problem, {"problem": problem.name, "status": "ERROR", "message": f"the grader itself failed ({exc}); ask the instructor to grade again"}, device)


def regrade(nb, log, course_notebook: bool = False) -> list[int]:
    """Overwrite the outputs of the graded cells of a course notebook with a fresh grading of its
    source; return their indices. The correctness and speed cells of one exercise share one grading.
    A notebook is the course's if ``course_notebook`` says so or a graded cell calls the autograder;
    other notebooks are left alone."""
    graded = [(i, cell) for i, cell in enumerate(nb.cells) if _graded(cell)]
    if not graded or not (course_notebook or any("autograder" in cell.source for _, cell in graded)):
        return []
    cells = source.code_cells(nb)
    device = grading.pick_device()
    results: dict = {}
    for _, cell in graded:
        call, result = graded_call(cell.source), None
        if call is not None:
            if (call.problem, call.entry) not in results:
                results[call.problem, call.entry] = _grade(call, cells, device, log)
            result = results[call.problem, call.entry]
        if result is None:
            cell.outputs = _outputs(cell, f"{HEADING}\n{CHANGED}", 0.0)
            log.warning("graded cell %s is not one grader call: 0 points", cell.metadata.nbgrader.get("grade_id"))
            continue
        cell.outputs = _outputs(cell, f"{HEADING}\n{report.text(result, call.part)}", result.get(call.points_key, 0.0), _roofline(result, call, log))
        log.info("%s %s: %s, %s points", call.problem, call.part, result["status"], result.get(call.points_key, 0.0))
    return [i for i, _ in graded]


class FreshGrades(NbGraderPreprocessor):
    """Replace every graded cell's outputs with a fresh grading of the notebook's source."""

    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        course_notebook = bool(registry.for_notebook(f"{meta['assignment']}/{meta['notebook']}.ipynb"))
        regrade(nb, self.log, course_notebook)
        return nb, resources


def autograde_preprocessors() -> list:
    """nbgrader's autograde steps with FreshGrades just before SaveAutoGrades (which reads grades)."""
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    if SaveAutoGrades not in defaults:
        raise ValueError("nbgrader's autograde steps have no SaveAutoGrades to put FreshGrades before")
    steps = [step for step in defaults if step is not FreshGrades]
    at = steps.index(SaveAutoGrades)
    return [*steps[:at], FreshGrades, *steps[at:]]


def fresh_grades_for_validate(notebook, **_) -> None:
    """``Execute.on_notebook_start`` hook: under ``nbgrader validate`` (nbgrader sets
    NBGRADER_EXECUTION=validate in its own process), grade the source before any cell runs and keep
    the kernel away from the graded cells. Under autograde it does nothing: FreshGrades grades then."""
    if os.environ.get("NBGRADER_EXECUTION") != "validate":
        return
    import logging

    for index in regrade(notebook, logging.getLogger("autograder.nbgrader_plugin")):
        tags = notebook.cells[index].metadata.setdefault("tags", [])
        if SKIP_TAG not in tags:
            tags.append(SKIP_TAG)
