"""Grading a class on a Ray cluster (``python -m autograder class SUBMITTED --ray [ADDRESS]``).

One Ray task per student and assignment, the unit of ``OUT/<assignment>/<student>.json``
(autograder.student_records): a task asks for one GPU when the cluster has GPUs (Ray pins it with
CUDA_VISIBLE_DEVICES, as the one-host workers are pinned), one CPU otherwise. The task grades with
student_records.grade_student and returns the record; this process writes it the moment it comes
back and, once an assignment is done, the CSVs with the one-host code (autograder.classroom).

The task gets the notebooks' bytes, not their paths, so the cluster's hosts need the grader
installed but neither SUBMITTED nor OUT. Whether a student is already graded is decided in the task
against the record's fingerprint: the fingerprint names the GPU, which only the host that grades knows.
Ray is imported only here, so the grader runs without it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .student_records import record_path, write_record

# The driver's choices that a grading reads from the environment; the hosts of a `ray start` cluster
# have their own environment, so these travel with the tasks.
FORWARDED_ENV = ("AUTOGRADER_DEVICE", "AUTOGRADER_TIMEOUT")
NOT_INSTALLED = ("--ray needs Ray, which is not installed here: pip install ray (on every host of the cluster, "
                 "beside the grader), or grade on one host without --ray")


def _notebooks(folder: Path | None) -> dict[str, bytes]:
    if folder is None or not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.ipynb"))}


def grade_task(assignment: str, student: str, handed_in: dict, released: dict, speed: bool, known: str | None) -> dict:
    """Runs in a Ray worker: lay the notebooks out as nbgrader does, in a folder of the task's own,
    and grade them unless ``known`` (the fingerprint of the record in OUT) says they were graded."""
    from . import grading, student_records

    device = grading.pick_device()
    with tempfile.TemporaryDirectory(prefix="gpu-brrr-ray-") as tmp:
        submitted, release = Path(tmp) / "submitted", Path(tmp) / "release"
        for folder, notebooks in ((submitted / student / assignment, handed_in), (release / assignment, released)):
            folder.mkdir(parents=True)
            for name, data in notebooks.items():
                (folder / name).write_bytes(data)
        if known is not None and known == student_records.fingerprint(submitted / student / assignment, device, speed):
            return {"already_graded": True, "student": student, "assignment": assignment}
        return student_records.grade_student(submitted, release if released else None, assignment, student, device, speed)


def _fingerprint_on_file(out: Path, assignment: str, student: str) -> str | None:
    try:
        return json.loads(record_path(out, assignment, student).read_text())["fingerprint"]
    except (OSError, ValueError, KeyError):
        return None


def run(args, submitted: Path, out: Path, release: Path | None, todo_assignments: list[str]) -> int:
    try:
        import ray
    except ImportError:
        print(NOT_INSTALLED)
        return 2
    started_here = not ray.is_initialized()
    if started_here:
        # No address: the cluster Ray finds on this host (RAY_ADDRESS, or one `ray start` began), else
        # a local one of this machine's CPUs and GPUs for this run. log_to_driver off: the progress
        # lines are the report, and a failed task's error comes back with its result.
        ray.init(address=None if args.ray == "local" else args.ray, log_to_driver=False)
    try:
        return _grade(ray, args, submitted, out, release, todo_assignments)
    finally:
        if started_here:
            ray.shutdown()


def _grade(ray, args, submitted: Path, out: Path, release: Path | None, todo_assignments: list[str]) -> int:
    from . import classroom

    resources = ray.cluster_resources()
    on_gpus = resources.get("GPU", 0) > 0 and os.environ.get("AUTOGRADER_DEVICE") != "cpu"
    options: dict = {"num_cpus": 1, "num_gpus": 1 if on_gpus else 0}
    env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
    if env:
        options["runtime_env"] = {"env_vars": env}
    task = ray.remote(grade_task).options(**options)
    speed = not args.no_speed
    pending: dict = {}
    for assignment in todo_assignments:
        everyone = classroom.shard(args.student or classroom.students(submitted, assignment), args.shard)
        released = ray.put(_notebooks(release / assignment if release else None))
        for student in everyone:
            known = None if args.regrade else _fingerprint_on_file(out, assignment, student)
            ref = task.remote(assignment, student, _notebooks(submitted / student / assignment), released, speed, known)
            pending[ref] = (assignment, student)
    unit = "GPU" if on_gpus else "CPU"
    print(f"{len(pending)} gradings of {len(todo_assignments)} assignments sent to Ray, one task per student and assignment, "
          f"each on one {unit} ({resources.get(unit, 0):g} {unit}s in the cluster)", flush=True)
    left = {a: sum(1 for x, _ in pending.values() if x == a) for a in todo_assignments}
    for assignment in todo_assignments:
        if left[assignment] == 0 and not args.no_merge:
            classroom.report(out, assignment)
    progress = classroom.Progress(len(pending))
    skipped, failures = 0, []
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        assignment, student = pending.pop(done[0])
        try:
            record = ray.get(done[0])
        except Exception as exc:  # a task's exception or a lost worker costs that student only
            failures.append(f"{assignment}/{student}")
            last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            progress.step(f"{assignment}/{student}: NOT GRADED, its task failed: {last}")
        else:
            if record.get("already_graded"):
                skipped += 1
                progress.step(f"{assignment}/{student}: already graded")
            else:
                write_record(out, record)
                progress.step(f"{assignment}/{classroom.describe(record)}")
        left[assignment] -= 1
        if left[assignment] == 0 and not args.no_merge:
            classroom.report(out, assignment)
    print(f"{skipped} already graded, {progress.total - skipped - len(failures)} graded" + (
        f", {len(failures)} not graded (their task failed: {', '.join(failures)}); run the same command again to retry them" if failures else ""))
    return 1 if failures else 0
