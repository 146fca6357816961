"""A class grading's points written into nbgrader's gradebook (``python -m autograder gradebook``)."""

from __future__ import annotations

import json
from pathlib import Path

from . import verdict
from .class_csv import MISSING, TAMPERED


def write_gradebook(out: Path, db_url: str, assignment: str, log=print) -> int:
    """Write the class grading's points into nbgrader's gradebook as the graded cells' auto scores,
    so that formgrader and `nbgrader export` show them. Each graded cell's instructor source (the
    gradebook's copy) says which exercise and part it grades; a part still NEEDS GPU is left as it is.
    A notebook with a TAMPERED row keeps its cells marked for a look. Returns the cells written."""
    from nbgrader.api import Gradebook, MissingEntry

    from .graded_calls import graded_call

    written = 0
    with Gradebook(db_url) as gb:
        for path in sorted((out / assignment).glob("*.json")):
            record = json.loads(path.read_text())
            by_notebook: dict = {}
            for row in record["rows"]:
                by_notebook.setdefault(row["notebook"], {})[row["exercise"]] = row
            for notebook, rows in by_notebook.items():
                try:
                    submission = gb.find_submission_notebook(notebook, assignment, record["student"])
                except MissingEntry:
                    log(f"{record['student']}/{assignment}/{notebook}: not in the gradebook; run `nbgrader autograde {assignment}` first")
                    continue
                tampered = any(r["status"] == TAMPERED for r in rows.values())
                for grade in submission.grades:
                    try:
                        cell_source = gb.find_source_cell(grade.name, notebook, assignment).source
                    except MissingEntry:
                        continue
                    call = graded_call(cell_source)
                    row = rows.get(call.problem) if call else None
                    if row is None or row["status"] == MISSING or row["parts"].get(call.part) == verdict.NEEDS_GPU:
                        continue
                    grade.auto_score = min(float(row[call.points_key]), float(grade.max_score))
                    grade.needs_manual_grade = tampered or grade.manual_score is not None
                    written += 1
                if tampered:
                    submission.flagged = True
            gb.db.commit()
    return written
