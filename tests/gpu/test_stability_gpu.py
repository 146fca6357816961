"""On a GPU: grading the reference solutions again and again gives the same verdict every time, and
the speed metric barely moves. Each run is appended to $GPU_OUT/stability.json as it finishes."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest

from autograder import cli
from autograder import problem as problem_mod

ROOT = Path(__file__).resolve().parent.parent.parent
RUNS = int(os.environ.get("STABILITY_RUNS", "10"))

pytestmark = pytest.mark.gpu


def _summary(runs: dict) -> dict:
    summary = {}
    for name, rows in runs.items():
        metrics = [r["metric"] for r in rows]
        ratios = [r["ratios"] for r in rows]
        summary[name] = {
            "runs": len(rows),
            "verdicts": sorted({r["status"] for r in rows}),
            "false_rejections": sum(1 for r in rows if r["status"] != "PASS" or r["points"] != r["max_points"]),
            "metric_mean": statistics.mean(metrics),
            "metric_cv": statistics.pstdev(metrics) / statistics.mean(metrics) if len(metrics) > 1 else None,
            "ratio_cv_per_size": [statistics.pstdev(col) / statistics.mean(col) for col in zip(*ratios, strict=True)] if len(rows) > 1 else None,
        }
    return summary


def test_reference_solutions_grade_the_same_every_time():
    out = Path(os.environ.get("GPU_OUT", ROOT / "_build")) / "stability.json"
    runs: dict = {}
    for run in range(RUNS):
        for problem in [p for p in problem_mod.all_problems() if problem_mod.has_speed_grade(p)]:
            notebook = ROOT / "solutions" / f"{problem.notebook}.ipynb"
            [result] = [r for r in cli.grade_notebook(notebook, "cuda", speed=True) if r["problem"] == problem.name]
            runs.setdefault(problem.name, []).append(
                {
                    "run": run,
                    "status": result["status"],
                    "points": result["points"],
                    "max_points": problem.max_points,
                    "metric": result.get("speed_metric", {}).get("value", 0.0),
                    "ratios": [row.get("ratio", 0.0) for row in result["speed"]],
                }
            )
        out.write_text(json.dumps({"runs": runs, "summary": _summary(runs)}, indent=2))
    summary = _summary(runs)
    for name, s in summary.items():
        assert s["false_rejections"] == 0, (name, s)
        assert s["metric_cv"] < 0.05, (name, s)
