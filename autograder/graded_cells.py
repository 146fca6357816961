"""The graded cells of a release notebook, and what a submitted notebook changed in them: the check
nbgrader makes with its checksums, behind a class grading's TAMPERED rows (autograder.classroom)."""

from __future__ import annotations

import json
from pathlib import Path


def _source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def _graded_cells(nb: dict) -> list[tuple[str, dict]]:
    return [(cell["metadata"]["nbgrader"].get("grade_id", ""), cell) for cell in nb.get("cells", [])
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade")]


def released_cells(path: Path) -> dict:
    """grade_id -> (cell type, source, points) of each graded cell of a release notebook."""
    nb = json.loads(path.read_text())
    return {grade_id: (cell["cell_type"], _source(cell).rstrip(), float(cell["metadata"]["nbgrader"].get("points", 0)))
            for grade_id, cell in _graded_cells(nb)}


def tampering(submitted: Path, released: dict) -> list[str]:
    """What changed in the graded cells of a submitted notebook, compared with the release: deleted,
    edited (source, cell type or points) and added graded cells. Empty when nothing did."""
    try:
        nb = json.loads(submitted.read_text())
    except (OSError, ValueError):
        return []  # an unreadable notebook is the grading's error, reported there
    found: dict = {}
    problems = []
    for grade_id, cell in _graded_cells(nb):
        if grade_id in found:
            problems.append(f"graded cell {grade_id} appears twice")
        found[grade_id] = (cell["cell_type"], _source(cell).rstrip(), float(cell["metadata"]["nbgrader"].get("points", 0)))
    for grade_id, cell in released.items():
        if grade_id not in found:
            problems.append(f"graded cell {grade_id} was deleted")
        elif found[grade_id] != cell:
            problems.append(f"graded cell {grade_id} was edited")
    problems += [f"graded cell {grade_id} was added (not in the release)" for grade_id in found if grade_id not in released]
    return problems
