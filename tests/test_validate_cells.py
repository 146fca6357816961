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


@pytest.mark.parametrize("points", [0, float("nan"), "two"])
def test_graded_cells_whose_points_were_lowered_are_caught(points):
    notebook = copy.deepcopy(nbformat.read(RELEASED, as_version=4))
    for cell in _graded(notebook):
        cell.metadata.nbgrader["points"] = points
    missing = validate_cells.missing_graded_cells(notebook, RELEASED)
    assert [line.split(":")[0] for line in missing] == ["vector_add_correctness", "vector_add_speed"], missing
    assert "not worth its 2 points" in missing[0]
    # In a copy the course cannot place, the problem's own points still hold.
    assert [line.split(":")[0] for line in validate_cells.wrong_points(notebook)] == ["vector_add_correctness", "vector_add_speed"]
    assert "is worth 2 points, not" in validate_cells.wrong_points(notebook)[0]


def _stripped() -> nbformat.NotebookNode:
    notebook = copy.deepcopy(nbformat.read(RELEASED, as_version=4))
    for cell in _graded(notebook):
        del cell.metadata["nbgrader"]
    return notebook


@pytest.mark.parametrize("path", ["elsewhere/vector_add.ipynb", "Copy of vector_add.ipynb", "act0-start/vector_add-Copy1.ipynb", "renamed.ipynb"])
def test_the_release_is_found_by_name_in_any_folder_or_by_the_cells_it_shares(path):
    assert validate_cells.release_for(_stripped(), Path(path)) == RELEASED
    assert len(validate_cells.missing_graded_cells(_stripped(), Path(path))) == 2


def test_a_notebook_with_no_graded_cells_and_nothing_of_the_course_is_not_validated():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    assert validate_cells.release_for(notebook, Path("mine.ipynb")) is None
    assert "there is nothing to validate" in validate_cells.missing_graded_cells(notebook, Path("mine.ipynb"))[0]


def test_cells_of_an_old_or_new_schema_are_brought_to_the_current_one():
    notebook = copy.deepcopy(nbformat.read(RELEASED, as_version=4))
    old, new = _graded(notebook)
    old.metadata.nbgrader["schema_version"] = 0
    new.metadata.nbgrader["schema_version"] = 4
    notebook.cells[0].metadata["nbgrader"] = "not a mapping"
    notebook, _ = validate_cells.CurrentSchemaOnly().preprocess(notebook, {})
    assert old.metadata.nbgrader["schema_version"] == new.metadata.nbgrader["schema_version"] == 3
    assert old.metadata.nbgrader["grade_id"] == "vector_add_correctness"
    assert "nbgrader" not in notebook.cells[0].metadata
    assert validate_cells.sanitize_preprocessors()[0] is validate_cells.CurrentSchemaOnly


def test_nbgrader_validate_compares_each_of_several_notebooks_with_its_own_release(tmp_path):
    """The stripped stub given twice (so no one argument names it) in a folder not named after its act."""
    import subprocess
    import sys

    stripped = tmp_path / "elsewhere" / "vector_add.ipynb"
    stripped.parent.mkdir()
    nbformat.write(_stripped(), stripped)
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "AUTOGRADER_DEVICE": "cpu"}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(stripped), str(stripped)], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    out = proc.stdout + proc.stderr
    assert "Success" not in out, out
    assert "VALIDATION FAILED" in out and "vector_add_correctness: the graded cell" in out, out
