"""A class grading's rows and CSVs: one row per student and exercise, and one total per student
(``OUT/<assignment>.csv`` and ``OUT/<assignment>-totals.csv``, autograder.classroom)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from . import verdict

MISSING, TAMPERED = "MISSING", "TAMPERED"
ROW_FIELDS = ("student", "assignment", "notebook", "exercise", "points", "max_points", "max_points_here", "needs_gpu_points", "correctness_points",
              "speed_points", "status", "note")
TOTAL_FIELDS = ("student", "assignment", "points", "max_points", "max_points_here", "needs_gpu_points", "statuses", "review", "seconds", "device")


def exercise_rows(result: dict, student: str, assignment: str, notebook: str, changed: list[str]) -> dict:
    status = verdict.part_status(result, "all") if result.get("problem") else result["status"]
    message = result.get("message") or result.get("speed_note") or ""
    if status == verdict.NEEDS_GPU and result["status"] == "PASS":
        message = f"correct ({result.get('correctness_points', 0):g} correctness points); its speed points need a GPU"
    # A TAMPERED row still carries its points (graded from the source, as every row is) and says
    # what the grading itself found.
    note = "; ".join([*changed, f"graded {status}" + (f": {message}" if message else "")]) if changed else message
    return {
        "student": student,
        "assignment": assignment,
        "notebook": notebook,
        "exercise": result.get("problem") or "",
        "points": round(float(result.get("points", 0.0)), 2),
        "max_points": float(result.get("max_points", 0.0)),
        "max_points_here": float(result.get("max_points_here", 0.0)),
        "needs_gpu_points": float(result.get("max_points", 0.0)) - float(result.get("max_points_here", 0.0)),
        "correctness_points": float(result.get("correctness_points", 0.0)),
        "speed_points": float(result.get("speed_points", 0.0)),
        "status": TAMPERED if changed else status,
        "note": note,
        # Kept in the record, not the CSV: whether the learner's code was sealed (Landlock) on the host that graded it.
        "sandbox": result.get("sandbox"),
        "parts": {part: verdict.part_status(result, part) for part in ("correctness", "speed", "all")} if result.get("problem") else {},
    }


def totals(record: dict) -> dict:
    rows = record["rows"]
    counts: dict = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    max_points = sum(r["max_points"] for r in rows)
    max_here = sum(r["max_points_here"] for r in rows)
    return {
        "student": record["student"],
        "assignment": record["assignment"],
        "points": round(sum(r["points"] for r in rows), 2),
        "max_points": max_points,
        "max_points_here": max_here,
        "needs_gpu_points": round(max_points - max_here, 2),
        "statuses": ", ".join(f"{status} {n}" for status, n in sorted(counts.items())),
        "review": "yes" if TAMPERED in counts else "",
        "seconds": record["seconds"],
        "device": record["gpu"],
    }


def write_rows_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, ROW_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def merge(out: Path, assignment: str) -> tuple[Path, Path, list[dict]]:
    """Write OUT/<assignment>.csv and OUT/<assignment>-totals.csv from the students' records."""
    records = [json.loads(p.read_text()) for p in sorted((out / assignment).glob("*.json"))]
    rows_path, totals_path = out / f"{assignment}.csv", out / f"{assignment}-totals.csv"
    write_rows_csv(rows_path, [row for record in records for row in record["rows"]])
    summary = [totals(r) for r in records]
    with totals_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, TOTAL_FIELDS)
        writer.writeheader()
        writer.writerows(summary)
    return rows_path, totals_path, summary
