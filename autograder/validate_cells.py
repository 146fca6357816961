"""What ``nbgrader validate`` must find in a course notebook: the graded cells of its released copy.

``nbgrader validate`` has no gradebook to restore the graded cells from, and it only checks the cells
the submitted notebook itself marks as graded. A learner's copy whose graded cells lost their
nbgrader metadata, were marked as answers or not graded, or were rewritten with new checksums would
have nothing checked and print "Success!". So the hook (autograder.nbgrader_plugin) compares the
notebook with the released copy of the same name in ``exercises/``: every graded cell there
(its grade id and its one grader call) must be in the notebook, marked as graded, unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbgrader import utils

RELEASE = Path(__file__).resolve().parents[1] / "exercises"


def validated_path(argv: list[str] | None = None) -> Path | None:
    """The notebook ``nbgrader validate`` was given (the one .ipynb among its arguments), if one."""
    paths = [Path(arg) for arg in (sys.argv if argv is None else argv)[1:] if arg.endswith(".ipynb")]
    return paths[0] if len(paths) == 1 else None


def released_graded_cells(path: Path) -> dict[str, str]:
    """grade_id -> source of each graded cell of the released notebook named like ``path`` (its act
    folder and file name), or {} when the course released no such notebook."""
    released = RELEASE / path.parent.name / path.name
    if not released.is_file():
        return {}
    notebook = nbformat.read(released, as_version=4)
    return {cell.metadata.nbgrader["grade_id"]: cell.source.strip() for cell in notebook.cells if cell.cell_type == "code" and utils.is_grade(cell)}


def missing_graded_cells(notebook, path: Path | None) -> list[str]:
    """The released graded cells that ``notebook`` lacks, as marked graded cells with the released
    call: one line each, saying which and how to restore it."""
    expected = released_graded_cells(path) if path is not None else {}
    present = {
        cell.metadata.nbgrader.get("grade_id"): cell.source.strip()
        for cell in notebook.cells
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)
    }
    return [
        f"{grade_id}: the graded cell `{call}` is missing, changed or no longer marked as graded; copy it back from the released notebook"
        for grade_id, call in expected.items()
        if present.get(grade_id) != call
    ]
