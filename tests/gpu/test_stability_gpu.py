"""On a GPU: grading a reference solution again and again gives the same verdict every time, and
the speed metric barely moves. Each problem is graded STABILITY_RUNS times in a row (the same
code path as a graded cell, without re-grading the rest of its notebook); after every run its
record goes to $GPU_OUT/stability/<problem>.json (one file per problem, as workers on several GPUs
write at once), so a run cut off by its time limit keeps what it measured. `-k` picks problems
(`-k act1` for one act)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autograder import grading, registry, source, stability
from autograder import problem as problem_mod

ROOT = Path(__file__).resolve().parent.parent.parent
RUNS = int(os.environ.get("STABILITY_RUNS", "10"))
TIMED = [p for p in registry.all_problems() if problem_mod.has_speed_grade(p)]

pytestmark = pytest.mark.gpu


def _save(folder: Path, name: str, rows: list) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(stability.record({name: rows}), indent=2))


def _grade(problem) -> dict:
    cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
    return grading.grade_source(problem, source.extract(cells, problem.function), problem.function, "cuda", True)


@pytest.mark.parametrize("problem", TIMED, ids=lambda p: p.name)
def test_reference_solution_grades_the_same_every_time(problem):
    out = Path(os.environ.get("GPU_OUT", ROOT / "_build")) / "stability"
    rows = []
    for run in range(RUNS):
        result = _grade(problem)
        rows.append(
            {
                "run": run,
                "status": result["status"],
                "points": result["points"],
                "max_points": problem.max_points,
                "metric": result.get("speed_metric", {}).get("value", 0.0),
                "ratios": [row.get("ratio", 0.0) for row in result["speed"]],
                # What a rejection said and what each size was charged: a false rejection is
                # diagnosed from the record alone.
                "message": result.get("message") if result["status"] != "PASS" else None,
                "ms": [[row["candidate"]["median_ms"], row["library"]["median_ms"]] for row in result["speed"]],
                "charged_more": [row.get("charged_more") for row in result["speed"]],
                "calls_per_window": [[row.get("calls_per_window"), row.get("library_calls_per_window")] for row in result["speed"]],
                "unqueued_windows": [row.get("unqueued_windows") for row in result["speed"]],
                "segments_us": [row.get("segments_us") for row in result["speed"]],
                "extra_ratios": [{name: extra.get("ratio") for name, extra in (row.get("extra_libraries") or {}).items()} for row in result["speed"]],
            }
        )
        _save(out, problem.name, rows)
    summary = stability.summarise({problem.name: rows})[problem.name]
    # Both sides are timed in the windows fitted to the library before either ran.
    assert all(mine == library for row in rows for mine, library in row["calls_per_window"]), [row["calls_per_window"] for row in rows]
    assert summary["false_rejections"] == 0, summary
    assert summary["metric_cv"] is None or summary["metric_cv"] < 0.05, summary
