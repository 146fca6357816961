"""Grading a class: every student's submission of an assignment, one CSV per assignment.

``python -m autograder class SUBMITTED`` reads nbgrader's layout, ``SUBMITTED/<student>/<assignment>/
<notebook>.ipynb``, grades each student's notebooks from their source (the grading of ``python -m
autograder grade``, in fresh processes), and writes into ``OUT`` (default ``grades/``):

- ``OUT/<assignment>/<student>.json``: one student's grading, written as soon as it is done. A
  student whose notebooks, device and grader version match their file is not graded again (unless
  ``--regrade``), so an interrupted run picks up where it stopped.
- ``OUT/<assignment>.csv``: one row per student and exercise (points, maximum, what this machine
  could award, status, note); ``OUT/<assignment>-totals.csv``: one row per student.

Statuses: PASS, FAIL, ERROR, REJECT (the grading's verdicts), NEEDS GPU (points this machine cannot
award: a CuPy exercise, or the speed of a correct kernel, on a CPU), MISSING (a notebook of the
release that was not submitted) and TAMPERED (a graded cell of the release was deleted or edited,
or one was added: the check nbgrader makes with its checksums; the points still come from the
notebook's source, the row asks for a look).

Spreading the work: on one host, ``--gpus`` runs one worker process per GPU, each pinned to its GPU
with CUDA_VISIBLE_DEVICES (timed gradings must not share a GPU), and on a CPU ``--workers N`` runs N
such processes. Across hosts, ``--shard K/N`` grades every N-th student from the K-th (a Slurm job
array: one task per GPU) into the shared ``OUT``, and ``--merge-only`` writes the CSVs from the
students' files once all tasks are done.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import grading, notebooks, registry, verdict

MISSING, TAMPERED = "MISSING", "TAMPERED"
ROW_FIELDS = ("student", "assignment", "notebook", "exercise", "points", "max_points", "max_points_here", "needs_gpu_points", "correctness_points",
              "speed_points", "status", "note")
TOTAL_FIELDS = ("student", "assignment", "points", "max_points", "max_points_here", "needs_gpu_points", "statuses", "review", "seconds", "device")


# -- what was released: the graded cells a submission must still hold --------------------------------

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


# -- one student -------------------------------------------------------------------------------------

def students(submitted: Path, assignment: str) -> list[str]:
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def assignments(submitted: Path) -> list[str]:
    return sorted({q.name for p in submitted.iterdir() if p.is_dir() for q in p.iterdir() if q.is_dir() and not q.name.startswith(".")})


def assignments_graded(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir()) if out.is_dir() else []


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb"))


def fingerprint(folder: Path, device: str, speed: bool = True) -> str:
    """Changes when a notebook of the submission, the device, the grader's version or whether speed
    is graded does."""
    digest = hashlib.sha256(f"{device}\n{_gpu_name(device)}\n{_grader_version()}\nspeed={speed}\n".encode())
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


def _gpu_name(device: str) -> str:
    if device != "cuda":
        return "CPU"
    import torch

    return torch.cuda.get_device_name(0)


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
        "parts": {part: verdict.part_status(result, part) for part in ("correctness", "speed", "all")} if result.get("problem") else {},
    }


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
        "gpu": _gpu_name(device),
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


# -- the CSVs ----------------------------------------------------------------------------------------

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


# -- spreading students over GPUs or CPU worker processes --------------------------------------------

def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them (all, if it is unset)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip()]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def shard(items: list[str], spec: str | None) -> list[str]:
    """``K/N``: every N-th item from the K-th (0 <= K < N), the share of one task of a job array."""
    if not spec:
        return items
    k, n = (int(x) for x in spec.split("/"))
    if not 0 <= k < n:
        raise ValueError(f"--shard {spec}: K must be in 0..N-1")
    return items[k::n]


class Progress:
    """One line per graded student: how many are done, the student's points and time, and an ETA."""

    def __init__(self, total: int, stream=sys.stdout):
        self.total, self.done, self.started, self.stream = total, 0, time.perf_counter(), stream
        self.lock = threading.Lock()

    def step(self, label: str) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.perf_counter() - self.started
            left = elapsed / self.done * (self.total - self.done)
            width = 20
            bar = "#" * (width * self.done // max(self.total, 1))
            print(f"[{bar:<{width}}] {self.done}/{self.total} {label} (elapsed {elapsed:.0f} s, about {left:.0f} s left)", file=self.stream, flush=True)


def _describe(record: dict) -> str:
    t = totals(record)
    return f"{record['student']}: {t['points']:g} / {t['max_points_here']:g} points gradable here ({t['statuses']}) in {record['seconds']:.1f} s"


def _worker_command(args, assignment: str, student: str) -> list[str]:
    command = [sys.executable, "-m", "autograder", "class", str(args.submitted), "--assignment", assignment, "--student", student,
               "--out", str(args.out), "--regrade", "--workers", "1", "--no-merge"]
    if args.release:
        command += ["--release", str(args.release)]
    if args.no_speed:
        command.append("--no-speed")
    return command


def run(args) -> int:
    """``python -m autograder class``: see the module's docstring."""
    submitted, out = Path(args.submitted), Path(args.out)
    release = Path(args.release) if args.release else None
    if release is not None and not release.is_dir():
        print(f"no release folder {release}: pass --release with nbgrader's release folder (exercises/ in this course)")
        return 2
    device = grading.pick_device()
    todo_assignments = args.assignment or assignments(submitted)
    if args.merge_only:
        for assignment in todo_assignments:
            _report(out, assignment)
        return 0
    gpus = visible_gpus() if device == "cuda" else []
    if args.gpus and args.gpus != "all":
        gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    slots = gpus if (device == "cuda" and len(gpus) > 1) else [None] * max(1, args.workers)
    for assignment in todo_assignments:
        everyone = args.student or students(submitted, assignment)
        mine = shard(everyone, args.shard)
        todo = [s for s in mine if args.regrade or not is_graded(out, submitted, assignment, s, device, not args.no_speed)]
        print(f"{assignment}: {len(mine)} students, {len(mine) - len(todo)} already graded, {len(todo)} to grade on "
              f"{_gpu_name(device)}" + (f" ({len(slots)} workers{', one per GPU: ' + ','.join(gpus) if slots[0] is not None else ''})" if len(slots) > 1 else ""), flush=True)
        progress = Progress(len(todo))
        if len(slots) == 1 and slots[0] is None:
            for student in todo:
                record = grade_student(submitted, release, assignment, student, device, not args.no_speed)
                write_record(out, record)
                progress.step(_describe(record))
        else:
            failures = _spread(args, assignment, todo, slots, progress)
            if failures:
                print(f"{len(failures)} students were not graded (their worker failed): {', '.join(failures)}; run the same command again to retry them")
        if not args.no_merge:
            _report(out, assignment)
    return 0


def _spread(args, assignment: str, todo: list[str], slots: list, progress: Progress) -> list[str]:
    """Grade ``todo`` with one worker process per slot (a GPU id, pinned with CUDA_VISIBLE_DEVICES,
    or None for a CPU worker); each slot takes the next student as soon as it is free."""
    queue = list(todo)
    lock = threading.Lock()
    failures: list[str] = []

    def work(slot):
        env = dict(os.environ)
        if slot is not None:
            env["CUDA_VISIBLE_DEVICES"] = slot
        while True:
            with lock:
                if not queue:
                    return
                student = queue.pop(0)
            proc = subprocess.run(_worker_command(args, assignment, student), env=env, capture_output=True, text=True)
            path = record_path(Path(args.out), assignment, student)
            if proc.returncode != 0 or not path.exists():
                with lock:
                    failures.append(student)
                last = (proc.stderr.strip().splitlines() or [""])[-1]
                progress.step(f"{student}: NOT GRADED, its worker exited with {proc.returncode}: {last}")
                continue
            where = f" on GPU {slot}" if slot is not None else ""
            progress.step(_describe(json.loads(path.read_text())) + where)

    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        list(pool.map(work, slots))
    return failures


def _report(out: Path, assignment: str) -> None:
    if not (out / assignment).is_dir():
        print(f"{assignment}: no graded student in {out / assignment}")
        return
    rows_path, totals_path, summary = merge(out, assignment)
    width = max([len("student"), *(len(t["student"]) for t in summary)])
    print(f"{'student':<{width}}  {'points':>7}  {'gradable here':>13}  {'worth':>6}  statuses")
    for t in summary:
        flag = "  REVIEW" if t["review"] else ""
        print(f"{t['student']:<{width}}  {t['points']:>7.2f}  {t['max_points_here']:>13g}  {t['max_points']:>6g}  {t['statuses']}{flag}")
    print(f"wrote {rows_path} and {totals_path}")


# -- nbgrader's gradebook ----------------------------------------------------------------------------

def write_gradebook(out: Path, db_url: str, assignment: str, log=print) -> int:
    """Write the class grading's points into nbgrader's gradebook as the graded cells' auto scores,
    so that formgrader and `nbgrader export` show them. Each graded cell's instructor source (the
    gradebook's copy) says which exercise and part it grades; a part still NEEDS GPU is left as it is.
    A notebook with a TAMPERED row keeps its cells marked for a look. Returns the cells written."""
    from nbgrader.api import Gradebook, MissingEntry

    from .nbgrader_plugin import graded_call

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
