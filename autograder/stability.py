"""Grading the same reference solution again and again: does the verdict hold, and how far does the
speed metric move?

The GPU run's stability step (tests/gpu/test_stability_gpu.py) grades each timed reference solution
several times in a row and records one row per grading. Records from several calls (one 10-minute
call cannot hold every problem) merge here into one file and one Markdown table, which the book
shows so that a learner knows how much of a difference between two of their own gradings is noise.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from . import registry


def summarise(runs: dict[str, list[dict]]) -> dict[str, dict]:
    """Per problem: how many gradings, which verdicts, how many fell short of full marks (false
    rejections of an honest solution), and the spread (coefficient of variation) of the speed metric
    and of the ratio to the library at each benchmark size."""
    summary = {}
    for name, rows in runs.items():
        metrics = [r["metric"] for r in rows]
        ratios = [r["ratios"] for r in rows]
        several = len(rows) > 1
        summary[name] = {
            "runs": len(rows),
            "verdicts": sorted({r["status"] for r in rows}),
            "false_rejections": sum(1 for r in rows if r["status"] != "PASS" or r["points"] != r["max_points"]),
            "metric_mean": statistics.mean(metrics),
            "metric_cv": _cv(metrics) if several else None,
            "ratio_cv_per_size": [_cv(col) for col in zip(*ratios, strict=True)] if several else None,
            "ratio_range_per_size": [[min(col), max(col)] for col in zip(*ratios, strict=True)],
        }
    return summary


def record(runs: dict[str, list[dict]]) -> dict:
    """What a record file holds: every grading, and the summary of them."""
    return {"runs": runs, "summary": summarise(runs)}


def _cv(values) -> float:
    mean = statistics.mean(values)
    return statistics.pstdev(values) / mean if mean else float("inf")


def merge(paths: list[Path]) -> dict:
    """One record from several record files; a problem graded in more than one of them keeps every
    grading, numbered in the order of the files given."""
    runs: dict[str, list[dict]] = {}
    sources: dict[str, list[str]] = {}
    for path in paths:
        for name, rows in json.loads(Path(path).read_text())["runs"].items():
            kept = runs.setdefault(name, [])
            start = len(kept)
            kept.extend({**row, "run": start + i} for i, row in enumerate(rows))
            sources.setdefault(name, []).append(f"{Path(path).parent.name}/{Path(path).name}")
    return {**record(dict(sorted(runs.items()))), "sources": sources}


def _metric_name(name: str) -> str:
    try:
        metric = registry.get(name).speed_scale.metric
    except KeyError:
        return "speed metric"
    return metric.unit


def _ratio(value: float) -> str:
    # The first SGEMM steps run at a few hundredths of cuBLAS: keep three significant digits there too.
    return f"{value:.4f}" if abs(value) < 0.1 else f"{value:.3f}"


def _metric(value: float, label: str) -> str:
    return f"{value:.1%} {label}" if label == "of copy bandwidth" else f"{_ratio(value)}{label}"


def markdown(merged: dict, heading: str) -> str:
    """The table the book includes: one row per problem."""
    lines = [
        heading,
        "",
        "| exercise | gradings | verdicts | short of full marks | speed metric (mean) | its spread (CV) | ratio to the library per benchmark size (min-max) | largest ratio CV |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in merged["summary"].items():
        label = _metric_name(name)
        ranges = ", ".join(f"{_ratio(lo)}-{_ratio(hi)}x" for lo, hi in s["ratio_range_per_size"])
        cv = "n/a" if s["metric_cv"] is None else f"{s['metric_cv']:.2%}"
        worst = "n/a" if not s["ratio_cv_per_size"] else f"{max(s['ratio_cv_per_size']):.2%}"
        lines.append(
            f"| `{name}` | {s['runs']} | {', '.join(s['verdicts'])} | {s['false_rejections']} | "
            f"{_metric(s['metric_mean'], label)} | {cv} | {ranges} | {worst} |"
        )
    return "\n".join(lines) + "\n"


def write(paths: list[Path], out: Path, heading: str) -> dict:
    """Merge ``paths`` and write ``out``.json and ``out``.md."""
    merged = merge(paths)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(merged, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(merged, heading))
    return merged
