"""The speed benchmark of the reference solutions: every solution notebook graded on this GPU, the
numbers written to a run's folder, results/runs/<date>-<GPU>-benchmark/ by default (JSON with the
device, versions and date; one Markdown table per act; one roofline per exercise), and each solution
checked against its target."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from . import grading, metrics, notebooks, registry, report
from . import problem as problem_mod


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _rate(row: dict, compute_bound: bool) -> tuple[str, str]:
    if compute_bound:
        return f"{row['flop_per_s'] / 1e12:,.1f} TFLOP/s", f"{row['flop_per_s'] / row['peak_flop_per_s']:.1%} of matmul peak"
    return f"{row['bandwidth'] / 1e9:,.0f} GB/s", f"{row['copy_fraction']:.1%} of copy"


def _target(p) -> str:
    target = p.speed_scale.metric.level(p.solution_target)
    if p.solution_library_ratio is not None:
        target += f", {p.solution_library_ratio:.2f}x library (level within {problem_mod.LEVEL_BAND:.0%})"
    return target


def _markdown(act: str, rows: list[dict], meta: dict) -> str:
    lines = [
        f"Measured on **{meta['device_name']}** on {meta['date']} with Python {meta['versions'].get('python')}, "
        f"torch {meta['versions'].get('torch')}, Triton {meta['versions'].get('triton')}, CuPy {meta['versions'].get('cupy')}. "
        f"Measured copy bandwidth: **{meta['copy_bandwidth'] / 1e9:,.0f} GB/s**.",
        "",
        "| exercise | size | solution (ms) | rate | of ceiling | library | library (ms) | ratio to library | other baselines | target | met |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|---:|---|",
    ]
    for r in rows:
        if not r["problem"].startswith(act + "."):
            continue
        p = registry.get(r["problem"])
        if not r.get("speed"):
            lines.append(f"| `{p.name}` | | | | | {p.library_name} | | | | {_target(p)} | {r['status']}: {r.get('message', '')} |")
            continue
        compute_bound = p.speed_scale.metric is metrics.LIBRARY_RATIO and p.flops(p.bench_sizes[0]) / max(p.bytes_moved(p.bench_sizes[0]), 1) > 10
        for s in r["speed"]:
            rate, fraction = _rate(s, compute_bound)
            missed = p.solution_shortfalls(s)
            others = "; ".join(f"{name} {e['median_ms']:.4f} ms ({e['ratio']:.2f}x)" for name, e in (s.get("extra_libraries") or {}).items())
            lines.append(
                f"| `{p.name}` | {s.get('size_label', s['size'])} | {s['candidate']['median_ms']:.4f} ± {s['candidate']['stderr_ms']:.4f} | "
                f"{rate} | {fraction} | {p.library_name} | {s['library']['median_ms']:.4f} | {s['ratio']:.2f}x | {others} | "
                f"{_target(p)} | {'no: ' + '; '.join(missed) if missed else 'yes'} |"
            )
    return "\n".join(lines) + "\n"


def _graded(solutions: Path, recorded: Path | None):
    """(problem, result) for every exercise with a speed grade: read from the results the solution
    notebooks' graded cells recorded (``recorded``), or graded here from the notebooks."""
    for p in registry.all_problems():
        notebook = solutions / f"{p.notebook}.ipynb"
        if not problem_mod.has_speed_grade(p) or not notebook.exists():
            continue
        if recorded is not None:
            path = recorded / f"{p.name}.json"
            if path.exists():
                yield p, json.loads(path.read_text())
            else:
                yield p, {"problem": p.name, "status": "ERROR", "message": f"no graded result was recorded in {recorded}", "speed": []}
            continue
        for result in notebooks.grade_notebook(notebook, "cuda", speed=True):
            if result["problem"] == p.name:
                yield p, result


def run(solutions: Path, out: Path, recorded: Path | None = None) -> int:
    device = grading.pick_device()
    if device != "cuda" and recorded is None:
        print("the speed benchmark needs a GPU; on this machine `python -m autograder grade solutions` checks correctness")
        return 0

    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for _, result in _graded(solutions, recorded):
        rows.append(result)
        print(report.text(result))
        print()
        png = report.roofline_png(result)
        if png:
            (out / f"{result['problem']}-roofline.png").write_bytes(png)
    first = next((r for r in rows if r.get("device_name")), {})
    ceilings = first.get("ceilings") or {}
    meta = {
        "device_name": first.get("device_name", "unknown"),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "versions": first.get("versions", {}),
        "copy_bandwidth": ceilings.get("copy", {}).get("bytes_per_s", float("nan")),
        "ceilings": ceilings,
    }
    for r in rows:
        r.pop("output", None)
    slug = _slug(meta["device_name"])
    (out / f"bench-{slug}.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2, default=str))
    for act in sorted({r["problem"].split(".")[0] for r in rows}):
        (out / f"{act}.md").write_text(_markdown(act, rows, meta))
    failures = []
    for r in rows:
        p = registry.get(r["problem"])
        if r["status"] != "PASS" or r.get("points") != p.max_points:
            failures.append(f"{p.name}: {r['status']} {r.get('points')} / {p.max_points}")
        for s in r.get("speed", []):
            for missed in p.solution_shortfalls(s):
                failures.append(f"{p.name} at {s.get('size_label', s['size'])}: {missed}")
    print(f"wrote {out}/bench-{slug}.json and the act tables")
    for f in failures:
        print(f"TARGET MISSED: {f}")
    return 1 if failures else 0
