"""nbgrader's grades from a fresh grading of the notebook's source, never from its kernel.

A graded cell runs in the learner's own kernel, where any earlier cell can replace
``autograder.grade_correctness``, the name ``autograder`` or the package on disk. So the points nbgrader
records are recomputed here, from the notebook's source, in fresh processes (the grading of
``python -m autograder grade``), and written over each graded cell's outputs: the report on stdout
and the points as the cell's result. A graded cell that is not exactly one grader call earns zero.

- ``FreshGrades``: a preprocessor for ``nbgrader autograde``; ``autograde_preprocessors`` puts it
  after the steps that filter or trim outputs and before ``SaveAutoGrades``, the step that reads the
  grades, and leaves out nbgrader's ``Execute`` (unsandboxed, the learner's cells could plant files
  or leave a process that answers a later grading through /proc): learner code runs only sandboxed.
- ``fresh_grades_for_validate``: an ``Execute.on_notebook_start`` hook for ``nbgrader validate``,
  whose preprocessors cannot be configured: before any cell runs it writes the fresh grades into the
  graded cells and tags them so that the kernel skips them.
"""

from __future__ import annotations

import base64
import os

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute, NbGraderPreprocessor, SaveAutoGrades

from . import grading, osguard, registry, report, source, validate_cells, verdict
from .graded_calls import GradedCall, graded_call
from .notebooks import grade_exercise

HEADING = "Graded by the instructor's grader from this notebook's source, in a fresh process; nothing run in the notebook's kernel counts."
CHANGED = (
    "This graded cell was changed: a graded cell of this course is exactly one call such as "
    '`autograder.grade_correctness("act0.vector_add", vector_add)`, so it earns 0 points.'
)
# nbclient skips cells with this tag (NotebookClient.skip_cells_with_tag, left at its default).
SKIP_TAG = "skip-execution"


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


def _kernel_claim(cell) -> float | None:
    """The number a graded cell returned in the notebook's kernel under autograde, if it claimed any
    points. The course's grader returns 0.0 there (it grades nothing in the kernel), so a positive
    number means a learner cell replaced the grader; a missing result (the cell raised) claims nothing."""
    for output in cell.get("outputs", []):
        if output.get("output_type") != "execute_result":
            continue
        text = output.get("data", {}).get("text/plain", "")
        try:
            value = float("".join(text) if isinstance(text, list) else text)
        except ValueError:
            return None
        return value if value != 0 else None
    return None


def claim_note(claimed: float) -> str:
    return (
        f"TAMPERED: in the notebook's kernel this cell returned {claimed:g} instead of running the course's grader "
        "(which returns 0.0 there): a cell of the notebook replaced the grader. That number counts for nothing; "
        "the submission is flagged for the instructor."
    )


def regrade(nb, log, course_notebook: bool = False, statuses: dict | None = None, flag_kernel_claims: bool = False) -> list[int]:
    """Overwrite the outputs of the graded cells of a course notebook with a fresh grading of its
    source; return their indices. The correctness and speed cells of one exercise share one grading.
    A notebook is the course's if ``course_notebook`` says so or a graded cell calls the autograder;
    other notebooks are left alone. ``statuses``, if given, receives each graded cell's status by its
    grade_id (autograder.verdict.part_status: NEEDS GPU, PASS, FAIL, ...). ``flag_kernel_claims``
    (autograde, after the kernel ran) flags a graded cell that returned points in the kernel."""
    graded = [(i, cell) for i, cell in enumerate(nb.cells) if _graded(cell)]
    if not graded or not (course_notebook or any("autograder" in cell.source for _, cell in graded)):
        return []
    cells = source.code_cells(nb)
    device = grading.pick_device()
    results: dict = {}
    for _, cell in graded:
        grade_id = cell.metadata.nbgrader.get("grade_id")
        claimed = _kernel_claim(cell) if flag_kernel_claims else None
        call, result = graded_call(cell.source), None
        if call is not None:
            if (call.problem, call.entry) not in results:
                results[call.problem, call.entry] = _grade(call, cells, device, log)
            result = results[call.problem, call.entry]
        if result is None:
            cell.outputs = _outputs(cell, f"{HEADING}\n{CHANGED}", 0.0)
            log.warning("graded cell %s is not one grader call: 0 points", grade_id)
            if statuses is not None:
                statuses[grade_id] = {"status": "CHANGED", "note": CHANGED, "tampered": False}
            continue
        status = verdict.part_status(result, call.part)
        text = f"{HEADING}\n{report.text(result, call.part)}"
        if claimed is not None:
            text += "\n" + claim_note(claimed)
            log.warning("graded cell %s returned %g in the kernel: the grader was replaced there", grade_id, claimed)
        cell.outputs = _outputs(cell, text, result.get(call.points_key, 0.0), _roofline(result, call, log))
        log.info("%s %s: %s, %s points", call.problem, call.part, status, result.get(call.points_key, 0.0))
        if statuses is not None:
            statuses[grade_id] = {
                "status": status,
                "problem": call.problem,
                "part": call.part,
                "points": result.get(call.points_key, 0.0),
                "message": result.get("message") or result.get("speed_note") or "",
                "tampered": claimed is not None,
                "note": claim_note(claimed) if claimed is not None else "",
            }
    return [i for i, _ in graded]


class FreshGrades(NbGraderPreprocessor):
    """Replace every graded cell's outputs with a fresh grading of the notebook's source; leave each
    graded cell's status in ``resources["autograder"]`` for GradebookStatuses."""

    def preprocess(self, nb, resources):
        # Not dumpable: no process of the same user can reopen our pipes to the judges in /proc/PID/fd.
        osguard.hide_memory()
        meta = resources["nbgrader"]
        course_notebook = bool(registry.for_notebook(f"{meta['assignment']}/{meta['notebook']}.ipynb"))
        statuses: dict = {}
        regrade(nb, self.log, course_notebook, statuses, flag_kernel_claims=True)
        resources["autograder"] = statuses
        return nb, resources


def status_comment(statuses: dict) -> str:
    """What the gradebook's comment on a notebook says about the cells the autograder could not
    grade here or that were tampered with (empty if none)."""
    lines = []
    needs_gpu = [grade_id for grade_id, info in statuses.items() if info["status"] == verdict.NEEDS_GPU]
    if needs_gpu:
        lines.append(
            f"NEEDS GPU: {', '.join(needs_gpu)} could not be graded on this machine (no GPU); their 0 is not a wrong answer. "
            "Grade the class on a GPU machine (python -m autograder class) and write the scores here (python -m autograder gradebook)."
        )
    lines += [f"{grade_id}: {info['note']}" for grade_id, info in statuses.items() if info.get("tampered")]
    lines += [f"{grade_id}: CHANGED: {info['note']}" for grade_id, info in statuses.items() if info["status"] == "CHANGED"]
    return "\n".join(lines)


class GradebookStatuses(NbGraderPreprocessor):
    """After SaveAutoGrades: a graded cell that needs a GPU is marked as needing grading (its 0 is
    not a verdict), the notebook's first answer cell gets a comment naming those cells and any
    tampering, and a notebook whose kernel claimed points is flagged (formgrader shows all three)."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        statuses = resources.get("autograder") or {}
        meta = resources["nbgrader"]
        key = (meta["notebook"], meta["assignment"], meta["student"])
        comment = status_comment(statuses)
        answer = next((c.metadata.nbgrader["grade_id"] for c in nb.cells if utils.is_solution(c) or utils.is_task(c)), None)
        with Gradebook(meta["db_url"]) as gb:
            for grade_id, info in statuses.items():
                if info["status"] == verdict.NEEDS_GPU:
                    gb.find_grade(grade_id, *key).needs_manual_grade = True
            if comment and answer:
                row = gb.find_comment(answer, *key)
                row.auto_comment = "\n".join(x for x in (row.auto_comment, comment) if x)
            if any(info.get("tampered") for info in statuses.values()):
                gb.find_submission_notebook(*key).flagged = True
            gb.db.commit()
        return nb, resources


def autograde_preprocessors() -> list:
    """nbgrader's autograde steps without Execute (the learner's cells are not run: see the module's
    docstring), with FreshGrades just before SaveAutoGrades (which reads grades) and
    GradebookStatuses just after it."""
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    if SaveAutoGrades not in defaults:
        raise ValueError("nbgrader's autograde steps have no SaveAutoGrades to put FreshGrades before")
    steps = [step for step in defaults if step not in (FreshGrades, GradebookStatuses, Execute)]
    at = steps.index(SaveAutoGrades)
    return [*steps[:at], FreshGrades, SaveAutoGrades, GradebookStatuses, *steps[at + 1:]]


def validate_note(info: dict, points: float) -> str:
    """The sentence `nbgrader validate` prints for a graded cell that did not earn all its points
    (nbgrader's own is "Partial credit; passed some but not all of the tests", even for a zero)."""
    if info["status"] == verdict.NEEDS_GPU:
        return (
            f"NEEDS GPU: this cell's {points:g} points are graded only on a machine with an NVIDIA GPU, and this one has none, "
            "so nothing here checked them. Run the notebook in Colab with a GPU runtime to see them graded."
        )
    if info["status"] == "CHANGED":
        return f"CHANGED: {info['note']}"
    detail = f": {info['message']}" if info.get("message") else ""
    return f"{info['status']}: {info['points']:g} of {points:g} points{detail}"


def fresh_grades_for_validate(notebook, **_) -> None:
    """``Execute.on_notebook_start`` hook: under ``nbgrader validate`` (nbgrader sets
    NBGRADER_EXECUTION=validate in its own process), grade the source before any cell runs and keep
    the kernel away from the graded cells. A cell short of its points gets a sentence on stderr, which
    nbgrader prints instead of its own; what this machine cannot check is listed first. Under
    autograde it does nothing: FreshGrades grades then."""
    if os.environ.get("NBGRADER_EXECUTION") != "validate":
        return
    import logging

    statuses: dict = {}
    missing = validate_cells.missing_graded_cells(notebook, validate_cells.validated_path())
    indices = regrade(notebook, logging.getLogger("autograder.nbgrader_plugin"), course_notebook=bool(missing), statuses=statuses)
    for index in indices:
        cell = notebook.cells[index]
        tags = cell.metadata.setdefault("tags", [])
        if SKIP_TAG not in tags:
            tags.append(SKIP_TAG)
        info, points = statuses.get(cell.metadata.nbgrader.get("grade_id")), float(cell.metadata.nbgrader.get("points", 0))
        if info and info.get("points", 0) < points:
            cell.outputs.append(new_output("stream", name="stderr", text=validate_note(info, points) + "\n"))
    needs_gpu = [grade_id for grade_id, info in statuses.items() if info["status"] == verdict.NEEDS_GPU]
    if needs_gpu:
        print(f"This machine has no GPU: {len(needs_gpu)} graded cell(s) cannot be checked here ({', '.join(needs_gpu)}); they are listed below as NEEDS GPU, not as wrong answers.")
    if missing:  # nothing nbgrader would check: it must not print Success
        raise RuntimeError("VALIDATION FAILED, graded cells of the released notebook are not here as released:\n" + "\n".join(missing))
