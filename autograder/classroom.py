"""Grading a class: every student's submission of an assignment, one CSV per assignment.

``python -m autograder class SUBMITTED`` reads nbgrader's layout, ``SUBMITTED/<student>/<assignment>/
<notebook>.ipynb``, grades each student's notebooks from their source (the grading of ``python -m
autograder grade``, in fresh processes; autograder.student_records), and writes into ``OUT`` (default
``grades/``):

- ``OUT/<assignment>/<student>.json``: one student's grading, written as soon as it is done. A
  student whose notebooks, device and grader version match their file is not graded again (unless
  ``--regrade``), so an interrupted run picks up where it stopped.
- ``OUT/<assignment>.csv``: one row per student and exercise (points, maximum, what this machine
  could award, status, note); ``OUT/<assignment>-totals.csv``: one row per student
  (autograder.class_csv).

Statuses: PASS, FAIL, ERROR, REJECT (the grading's verdicts), NEEDS GPU (points this machine cannot
award: a CuPy exercise, or the speed of a correct kernel, on a CPU), MISSING (a notebook of the
release that was not submitted) and TAMPERED (a graded cell of the release was deleted or edited,
or one was added: the check nbgrader makes with its checksums, autograder.graded_cells; the points
still come from the notebook's source, the row asks for a look).

Spreading the work: on one host, ``--gpus`` runs one worker process per GPU, each pinned to its GPU
with CUDA_VISIBLE_DEVICES (timed gradings must not share a GPU), and on a CPU ``--workers N`` runs N
such processes. Across hosts, ``--shard K/N`` grades every N-th student from the K-th (a Slurm job
array: one task per GPU) into the shared ``OUT``, and ``--merge-only`` writes the CSVs from the
students' files once all tasks are done. On a Ray cluster, ``--ray [ADDRESS]`` sends one task per
student and assignment, each with one GPU (or one CPU), and writes the same files (autograder.ray_engine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import grading
from .class_csv import merge, totals
from .student_records import gpu_name, grade_student, is_graded, record_path, write_record

# -- who handed in what ------------------------------------------------------------------------------

def students(submitted: Path, assignment: str) -> list[str]:
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def assignments(submitted: Path) -> list[str]:
    return sorted({q.name for p in submitted.iterdir() if p.is_dir() for q in p.iterdir() if q.is_dir() and not q.name.startswith(".")})


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

    def __init__(self, total: int):
        self.total, self.done, self.started = total, 0, time.perf_counter()
        self.lock = threading.Lock()

    def step(self, label: str) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.perf_counter() - self.started
            left = elapsed / self.done * (self.total - self.done)
            width = 20
            bar = "#" * (width * self.done // max(self.total, 1))
            print(f"[{bar:<{width}}] {self.done}/{self.total} {label} (elapsed {elapsed:.0f} s, about {left:.0f} s left)", flush=True)


def describe(record: dict) -> str:
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


def plan(args) -> tuple[Path, Path, Path | None, list[str]] | int:
    """``python -m autograder class``'s folders and assignments, or its exit status where there is
    nothing to grade (no release folder; ``--merge-only``, which writes the CSVs here). The grading
    itself is ``run`` on one host, or autograder.ray_engine on a Ray cluster (cli picks)."""
    submitted, out = Path(args.submitted), Path(args.out)
    release = Path(args.release) if args.release else None
    if release is not None and not release.is_dir():
        print(f"no release folder {release}: pass --release with nbgrader's release folder (exercises/ in this course)")
        return 2
    todo_assignments = args.assignment or assignments(submitted)
    if args.merge_only:
        for assignment in todo_assignments:
            report(out, assignment)
        return 0
    return submitted, out, release, todo_assignments


def run(args, submitted: Path, out: Path, release: Path | None, todo_assignments: list[str]) -> int:
    """The class graded on this host: see the module's docstring."""
    device = grading.pick_device()
    gpus = visible_gpus() if device == "cuda" else []
    if args.gpus and args.gpus != "all":
        gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    slots = gpus if (device == "cuda" and len(gpus) > 1) else [None] * max(1, args.workers)
    for assignment in todo_assignments:
        everyone = args.student or students(submitted, assignment)
        mine = shard(everyone, args.shard)
        todo = [s for s in mine if args.regrade or not is_graded(out, submitted, assignment, s, device, not args.no_speed)]
        print(f"{assignment}: {len(mine)} students, {len(mine) - len(todo)} already graded, {len(todo)} to grade on "
              f"{gpu_name(device)}" + (f" ({len(slots)} workers{', one per GPU: ' + ','.join(gpus) if slots[0] is not None else ''})" if len(slots) > 1 else ""), flush=True)
        progress = Progress(len(todo))
        if len(slots) == 1 and slots[0] is None:
            for student in todo:
                record = grade_student(submitted, release, assignment, student, device, not args.no_speed)
                write_record(out, record)
                progress.step(describe(record))
        else:
            failures = _spread(args, assignment, todo, slots, progress)
            if failures:
                print(f"{len(failures)} students were not graded (their worker failed): {', '.join(failures)}; run the same command again to retry them")
        if not args.no_merge:
            report(out, assignment)
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
            progress.step(describe(json.loads(path.read_text())) + where)

    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        list(pool.map(work, slots))
    return failures


def report(out: Path, assignment: str) -> None:
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
