"""Grading a saved notebook from its source: the exercises it holds, each graded afresh from the
learner's cells in fresh processes (shared by the command line, the benchmark and nbgrader's
preprocessor)."""

from __future__ import annotations

from pathlib import Path

from . import grading, registry, source, verdict


def grade_exercise(problem, cells: list[str], entry: str, device: str, speed: bool) -> dict:
    """Grade ``entry`` from the learner's code cells for one exercise, in fresh processes: the grading
    that `grade`, `validate` and nbgrader's preprocessor (autograder.nbgrader_plugin) share."""
    if problem.needs_gpu and device != "cuda":
        return verdict.score(problem, verdict.needs_gpu_result(problem), device)
    try:
        code = source.extract(cells, entry, getattr(problem, "also_needs", ()))
    except source.SourceError as exc:
        return verdict.score(problem, {"problem": problem.name, "status": "ERROR", "message": str(exc)}, device)
    return grading.grade_source(problem, code, entry, device, speed)


def grade_notebook(path: Path, device: str, speed: bool) -> list[dict]:
    problems = registry.for_notebook(str(path))
    if not problems:
        return [{"notebook": str(path), "problem": None, "status": "ERROR", "points": 0.0, "max_points": 0.0,
                 "message": "no exercise of the course is graded in this notebook (its name and folder must match one, e.g. act0-start/vector_add.ipynb)"}]
    results = []
    try:
        cells = source.notebook_cells(str(path))
    except source.SourceError as exc:
        cells, error = None, str(exc)
    for p in problems:
        if cells is None:
            result = verdict.score(p, {"problem": p.name, "status": "ERROR", "message": error}, device)
        else:
            result = grade_exercise(p, cells, p.function, device, speed)
        result["notebook"] = str(path)
        results.append(result)
    return results
