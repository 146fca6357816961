"""What ``nbgrader validate`` must find in a course notebook, and what ``nbgrader autograde`` must
not let a notebook's metadata do.

``nbgrader validate`` has no gradebook to restore the graded cells from, and it only checks the cells
the submitted notebook itself marks as graded, for the points it itself declares. A learner's copy
whose graded cells lost their nbgrader metadata, were marked as answers or not graded, were
rewritten with new checksums or given zero (or NaN) points would have nothing checked and print
"Success!". So the hook (autograder.nbgrader_plugin) compares the notebook with the released copy it
came from in ``exercises/``: every graded cell there (its grade id, its one grader call and its
points) must be in the notebook, marked as graded, unchanged. The released copy is found by the
notebook's file name in any act's folder (a Colab or Jupyter "Copy of" name too), else by the cells
the two share; nbgrader's validator is followed so that each of several notebooks given at once is
compared with its own. A graded grader call must also carry the problem's own points.

``CurrentSchemaOnly`` goes first in autograde's sanitizing steps: nbgrader stops a whole autograde
run (every student after this one) at a cell whose metadata claims an older or newer schema; every
cell the course releases has the current one, so such a claim is the learner's and is replaced by
the current schema before nbgrader's own checks (and the restoring of graded cells) run.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.converters import Autograde
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.preprocessors import NbGraderPreprocessor

RELEASE = Path(__file__).resolve().parents[1] / "exercises"
# "Copy of saxpy" (Colab), "saxpy-Copy1" (Jupyter), "saxpy (1)" (a second download).
COPY_NAME = re.compile(r"^(?:Copy of )?(?P<name>.+?)(?:-Copy\d+| \(\d+\))?$")
PART_POINTS = {"all": "max_points", "correctness": "correctness_points", "speed": "speed_points"}
_validating: list[Path] = []


def follow_validated_notebooks() -> None:
    """Have nbgrader's Validator note which notebook it is validating (the hook is handed only the
    notebook's contents), for ``validated_path``."""
    from nbgrader.validator import Validator

    original = Validator.validate
    if getattr(original, "follows_notebooks", False):
        return

    def validate(self, filename):
        _validating.append(Path(filename).resolve())
        try:
            return original(self, filename)
        finally:
            _validating.pop()

    validate.follows_notebooks = True
    Validator.validate = validate


def validated_path(argv: list[str] | None = None) -> Path | None:
    """The notebook ``nbgrader validate`` is validating now, else the one .ipynb among its arguments."""
    if _validating and argv is None:
        return _validating[-1]
    paths = [Path(arg) for arg in (sys.argv if argv is None else argv)[1:] if arg.endswith(".ipynb")]
    return paths[0] if len(paths) == 1 else None


def _cells(notebook) -> tuple[set, set]:
    ids = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in notebook.cells} - {None}
    return ids, {cell.source.strip() for cell in notebook.cells if cell.source.strip()}


def release_for(notebook, path: Path | None) -> Path | None:
    """The released notebook ``notebook`` is a copy of, or None when it shares nothing with any."""
    if path is not None:
        for stem in dict.fromkeys((path.stem, COPY_NAME.match(path.stem)["name"])):
            found = sorted(RELEASE.glob(f"*/{stem}.ipynb"))
            if found:
                return found[0]
    ids, sources = _cells(notebook)
    best, shared = None, 0
    for released in sorted(RELEASE.glob("*/*.ipynb")):
        their_ids, their_sources = _cells(nbformat.read(released, as_version=4))
        overlap = len(ids & their_ids) + len(sources & their_sources)
        if overlap > shared:
            best, shared = released, overlap
    return best


def released_graded_cells(released: Path | None) -> dict[str, tuple[str, float]]:
    """grade_id -> (source, points) of each graded cell of the released notebook ``released``."""
    if released is None or not released.is_file():
        return {}
    notebook = nbformat.read(released, as_version=4)
    return {
        cell.metadata.nbgrader["grade_id"]: (cell.source.strip(), float(cell.metadata.nbgrader["points"]))
        for cell in notebook.cells
        if cell.cell_type == "code" and utils.is_grade(cell)
    }


def _points(cell) -> float:
    try:
        return float(cell.metadata.nbgrader.get("points", 0))
    except (TypeError, ValueError):
        return math.nan


def wrong_points(notebook) -> list[str]:
    """Graded grader calls whose points are not their problem's (whatever notebook they are in)."""
    from . import registry
    from .graded_calls import graded_call

    lines = []
    for cell in notebook.cells:
        call = graded_call(cell.source) if cell.cell_type == "code" and utils.is_grade(cell) else None
        if call is None:
            continue
        try:
            problem = registry.get(call.problem)
        except KeyError:
            continue
        expected = getattr(problem, PART_POINTS[call.part])
        if _points(cell) != expected:
            lines.append(f"{cell.metadata.nbgrader.get('grade_id')}: the graded cell is worth {expected:g} points, not {_points(cell):g}; copy it back from the released notebook")
    return lines


def missing_graded_cells(notebook, path: Path | None) -> list[str]:
    """What keeps ``notebook`` (validated as ``path``) from being checked as released: each released
    graded cell it lacks as a marked graded cell with the released call and points, and each graded
    call with points not its problem's; one line each, saying which and how to restore it."""
    released = release_for(notebook, path)
    expected = released_graded_cells(released)
    present = {
        cell.metadata.nbgrader.get("grade_id"): (cell.source.strip(), _points(cell))
        for cell in notebook.cells
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)
    }
    lines = [
        f"{grade_id}: the graded cell `{call}` is missing, changed, not worth its {points:g} points or no longer marked as graded; copy it back from the released notebook"
        for grade_id, (call, points) in expected.items()
        if present.get(grade_id) != (call, points)
    ]
    if released is None and not present:
        lines.append("this notebook has no graded cells and is no copy of a notebook the course released: there is nothing to validate")
    said = {line.split(":")[0] for line in lines}
    return lines + [line for line in wrong_points(notebook) if line.split(":")[0] not in said]


class CurrentSchemaOnly(NbGraderPreprocessor):
    """Bring nbgrader metadata of another schema to the current one (see the module's docstring):
    an older one as `nbgrader update` would, a newer one (or none readable) relabelled, so that the
    checks after this step judge it; metadata nbgrader cannot upgrade is dropped."""

    def preprocess(self, nb, resources):
        validator = MetadataValidator()
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            claimed = meta.get("schema_version") if isinstance(meta, dict) else meta
            if meta is None or claimed == validator.schema_version:
                continue
            self.log.warning("a cell's nbgrader metadata claims schema %r, not the released %r", claimed, validator.schema_version)
            try:
                if isinstance(claimed, int) and claimed < validator.schema_version:
                    validator.upgrade_cell_metadata(cell)
                else:
                    meta["schema_version"] = validator.schema_version
            except Exception:  # noqa: BLE001 -- whatever nbgrader cannot read is not the course's
                del cell.metadata["nbgrader"]
        return nb, resources


def sanitize_preprocessors() -> list:
    """nbgrader's sanitizing steps of autograde, with CurrentSchemaOnly first."""
    return [CurrentSchemaOnly, *Autograde.class_traits()["sanitize_preprocessors"].default()]
