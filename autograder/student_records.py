"""One student's grading of one assignment, kept in ``OUT/<assignment>/<student>.json`` with a
fingerprint that says whether it is still current (autograder.classroom grades a class with it)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path

from . import notebooks, registry, verdict
from .class_csv import MISSING, exercise_rows
from .graded_cells import released_cells, tampering


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb"))


def fingerprint(folder: Path, device: str, speed: bool = True) -> str:
    """Changes when a notebook of the submission, the device, the grader's version or whether speed
    is graded does."""
    digest = hashlib.sha256(f"{device}\n{gpu_name(device)}\n{_grader_version()}\nspeed={speed}\n".encode())
    for path in _notebooks(folder):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _grader_version() -> str:
    """A digest of the grader's own files (its checks, specs and references): a student graded by
    another version of the grader is graded again."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def gpu_name(device: str) -> str:
    if device != "cuda":
        return "CPU"
    import torch

    return torch.cuda.get_device_name(0)


def grade_student(submitted: Path, release: Path | None, assignment: str, student: str, device: str, speed: bool = True) -> dict:
    """Grade one student's notebooks of one assignment; the record written to OUT/<assignment>/<student>.json."""
    folder = submitted / student / assignment
    started = time.perf_counter()
    rows = []
    release_folder = release / assignment if release else None
    released = {p.name: p for p in _notebooks(release_folder)} if release_folder and release_folder.is_dir() else {}
    handed_in = {p.name: p for p in _notebooks(folder)}
    for name in sorted(set(released) | set(handed_in)):
        stem = name.removesuffix(".ipynb")
        if name not in handed_in:
            for problem in registry.for_notebook(f"{assignment}/{name}"):
                rows.append({"student": student, "assignment": assignment, "notebook": stem, "exercise": problem.name, "points": 0.0,
                             "max_points": problem.max_points, "max_points_here": verdict.max_points_on(problem, device),
                             "needs_gpu_points": problem.max_points - verdict.max_points_on(problem, device),
                             "correctness_points": 0.0, "speed_points": 0.0, "status": MISSING, "note": f"{name} was not submitted", "parts": {}})
            continue
        changed = tampering(handed_in[name], released_cells(released[name])) if name in released else []
        for result in notebooks.grade_notebook(handed_in[name], device, speed):
            rows.append(exercise_rows(result, student, assignment, stem, changed))
    return {
        "student": student,
        "assignment": assignment,
        "device": device,
        "gpu": gpu_name(device),
        # Which machine graded: with --ray or a job array, the host to look at when one grades oddly.
        "host": socket.gethostname(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "fingerprint": fingerprint(folder, device, speed),
        "graded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(time.perf_counter() - started, 2),
        "rows": rows,
    }


def record_path(out: Path, assignment: str, student: str) -> Path:
    return out / assignment / f"{student}.json"


def is_graded(out: Path, submitted: Path, assignment: str, student: str, device: str, speed: bool = True) -> bool:
    path = record_path(out, assignment, student)
    try:
        return json.loads(path.read_text())["fingerprint"] == fingerprint(submitted / student / assignment, device, speed)
    except (OSError, ValueError, KeyError):
        return False


def write_record(out: Path, record: dict) -> Path:
    path = record_path(out, record["assignment"], record["student"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)  # never a half-written record, even when a worker is killed
    return path


def assignments_graded(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir()) if out.is_dir() else []
