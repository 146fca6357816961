"""nbgrader validate's check that a course notebook still has its released graded cells
(autograder.validate_cells): a learner's copy that stripped, re-marked or rewrote them is caught."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from autograder import validate_cells

ROOT = Path(__file__).resolve().parents[1]
RELEASED = ROOT / "exercises" / "act0-start" / "vector_add.ipynb"


def _graded(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")]


def test_every_solution_and_released_notebook_has_every_graded_cell():
    paths = sorted((ROOT / "solutions").glob("*/*.ipynb")) + sorted((ROOT / "exercises").glob("*/*.ipynb"))
    assert len(paths) > 80
    for path in paths:
        assert validate_cells.missing_graded_cells(nbformat.read(path, as_version=4), path) == [], path


@pytest.mark.parametrize("tamper", ["strip_metadata", "not_graded", "answer_cell", "rewritten"])
def test_a_copy_whose_graded_cells_were_tampered_with_is_caught(tamper):
    notebook = copy.deepcopy(nbformat.read(RELEASED, as_version=4))
    for cell in _graded(notebook):
        if tamper == "strip_metadata":
            del cell.metadata["nbgrader"]
        elif tamper == "not_graded":
            cell.metadata.nbgrader["grade"] = False
        elif tamper == "answer_cell":
            cell.metadata.nbgrader["solution"] = True
        else:
            cell.source = "2"
    missing = validate_cells.missing_graded_cells(notebook, RELEASED)
    assert [line.split(":")[0] for line in missing] == ["vector_add_correctness", "vector_add_speed"]
    assert "copy it back from the released notebook" in missing[0]


def test_the_notebook_is_the_one_ipynb_among_validates_arguments():
    assert validate_cells.validated_path(["nbgrader", "validate", "act0-start/vector_add.ipynb"]) == Path("act0-start/vector_add.ipynb")
    assert validate_cells.validated_path(["nbgrader", "validate", "--invert"]) is None
    # A notebook the course did not release (or a renamed copy) has nothing to compare with.
    assert validate_cells.missing_graded_cells(nbformat.read(RELEASED, as_version=4), Path("elsewhere/renamed.ipynb")) == []
