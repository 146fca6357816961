"""`python -m autograder class --ray` on a local Ray cluster of two CPUs: the class of three
(tests/class_of_three.py) graded one Ray task per student and assignment gives the CSVs that the
one-host workers give, with the points earned inside Ray's worker processes (the grader's judge and
the learner's Landlock-sealed worker start there), and a second run grades no one again."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest

from autograder import class_csv, cli, verdict
from tests import class_of_three as klass

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.xdist_group("class_ray")


def _class(base: Path, *args: str) -> None:
    assert cli.main(["class", str(base / "submitted"), "--release", str(ROOT / "exercises"), *args]) == 0


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    import ray

    base = tmp_path_factory.mktemp("ray_class")
    klass.write_submitted(base / "submitted", ROOT / "exercises", ROOT / "solutions")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOGRADER_DEVICE", "cpu")
        # Before ray.init: the local cluster's workers start with this process's environment.
        mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
        _class(base, "--out", str(base / "workers"), "--workers", "2")
        ray.init(num_cpus=2, log_to_driver=False, include_dashboard=False)
        try:
            _class(base, "--out", str(base / "ray"), "--ray")
            yield {"base": base, "ray": ray}
        finally:
            ray.shutdown()


def _csv(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_ray_writes_the_csvs_of_the_one_host_workers(graded):
    base = graded["base"]
    for act in klass.ACTS:
        assert (base / "ray" / f"{act}.csv").read_text() == (base / "workers" / f"{act}.csv").read_text()
        # The seconds a grading took differ from run to run; everything else is the same.
        strip = [{k: v for k, v in row.items() if k != "seconds"} for row in _csv(base / "ray" / f"{act}-totals.csv")]
        assert strip == [{k: v for k, v in row.items() if k != "seconds"} for row in _csv(base / "workers" / f"{act}-totals.csv")]


def test_points_are_earned_inside_ray_tasks(graded):
    out = graded["base"] / "ray"
    act0 = {(r["student"], r["exercise"]): r for r in _csv(out / "act0-start.csv")}
    vector_add = act0[klass.ALICE, "act0.vector_add"]
    # Correct under the Triton interpreter in a worker that Ray's task started: its 2 correctness points.
    assert vector_add["status"] == verdict.NEEDS_GPU and float(vector_add["points"]) == 2.0
    assert act0[klass.BOB, "act0.saxpy"]["status"] == class_csv.MISSING
    act1 = {r["student"]: r for r in _csv(out / "act1-hierarchy-totals.csv")}
    assert float(act1[klass.ALICE]["points"]) == 4.0 and act1[klass.BOB]["review"] == "yes"
    record = json.loads((out / "act1-hierarchy" / f"{klass.ALICE}.json").read_text())
    graded_rows = [row for row in record["rows"] if row["status"] == "PASS"]
    assert len(graded_rows) == 3
    for row in graded_rows:
        assert row["sandbox"].startswith("Landlock"), row["sandbox"]


def test_a_second_ray_run_grades_no_one_again_unless_asked(graded, capsys):
    base = graded["base"]
    record = base / "ray" / "act1-hierarchy" / f"{klass.ALICE}.json"
    before = json.loads(record.read_text())["graded_at"], record.stat().st_mtime_ns
    capsys.readouterr()
    _class(base, "--out", str(base / "ray"), "--ray")
    assert "5 already graded, 0 graded" in capsys.readouterr().out
    assert (json.loads(record.read_text())["graded_at"], record.stat().st_mtime_ns) == before
    _class(base, "--out", str(base / "ray"), "--ray", "--assignment", "act1-hierarchy", "--student", klass.ALICE, "--regrade")
    assert "0 already graded, 1 graded" in capsys.readouterr().out
    assert record.stat().st_mtime_ns != before[1]


def test_without_ray_installed_the_message_says_what_to_do(tmp_path, monkeypatch, capsys):
    klass.write_submitted(tmp_path / "submitted", ROOT / "exercises", ROOT / "solutions")
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where Ray is not installed
    assert cli.main(["class", str(tmp_path / "submitted"), "--out", str(tmp_path / "out"), "--ray", "auto"]) == 2
    assert "--ray needs Ray, which is not installed here: pip install ray" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_seccomp_sealed_worker_grades_inside_a_ray_task(graded):
    """Act 3's memory exercises: the learner's step runs in a worker sealed by Landlock and a seccomp
    filter (no fork, no execve, no pipes), started from Ray's worker process."""
    base = graded["base"] / "memory"
    folder = base / "submitted" / "dave_lean_2026" / "act3-profiling"
    folder.mkdir(parents=True)
    (folder / "memory.ipynb").write_bytes((ROOT / "solutions" / "act3-profiling" / "memory.ipynb").read_bytes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOGRADER_DEVICE", "cpu")
        _class(base, "--out", str(base / "out"), "--ray", "--assignment", "act3-profiling")
    rows = {r["exercise"]: r for r in _csv(base / "out" / "act3-profiling.csv") if r["notebook"] == "memory"}
    assert {name: (row["status"], float(row["points"])) for name, row in rows.items()} == {
        "act3.lean_step": ("PASS", 3.0), "act3.snapshot_peak": ("PASS", 2.0)}
    record = json.loads((base / "out" / "act3-profiling" / "dave_lean_2026.json").read_text())
    assert all(row["sandbox"].startswith("Landlock") for row in record["rows"] if row["notebook"] == "memory")


class _FakeRay:
    """Ray's calls as autograder.ray_engine makes them, answered in this process: what each task
    asks for, and a task that fails for the students in ``lost``."""

    def __init__(self, resources: dict, lost: set):
        self.resources, self.lost, self.options, self.calls = resources, lost, None, []

    def cluster_resources(self):
        return self.resources

    def remote(self, fn):
        return _FakeTask(self)

    def put(self, value):
        return value

    def wait(self, refs, num_returns):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        assignment, student, known = self.calls[ref]
        if student in self.lost:
            raise RuntimeError("The worker died unexpectedly while executing this task.")
        return {"student": student, "assignment": assignment, "gpu": "NVIDIA H100", "seconds": 1.0, "fingerprint": "f", "rows": []}


class _FakeTask:
    def __init__(self, fake):
        self.fake = fake

    def options(self, **options):
        self.fake.options = options
        return self

    def remote(self, assignment, student, handed_in, released, speed, known):
        self.fake.calls.append((assignment, student, known))
        return len(self.fake.calls) - 1


@pytest.mark.parametrize(("device", "wanted"), [(None, {"num_cpus": 1, "num_gpus": 1}), ("cpu", {"num_cpus": 1, "num_gpus": 0})])
def test_each_task_asks_for_one_gpu_and_a_lost_task_costs_its_student_only(tmp_path, monkeypatch, capsys, device, wanted):
    import argparse

    from autograder import ray_engine

    klass.write_submitted(tmp_path / "submitted", ROOT / "exercises", ROOT / "solutions")
    if device:
        monkeypatch.setenv("AUTOGRADER_DEVICE", device)
    else:
        monkeypatch.delenv("AUTOGRADER_DEVICE", raising=False)
    fake = _FakeRay({"GPU": 4.0, "CPU": 64.0}, lost={klass.BOB})
    args = argparse.Namespace(student=None, shard=None, no_speed=False, regrade=False, no_merge=False)
    out = tmp_path / "out"
    assert ray_engine._grade(fake, args, tmp_path / "submitted", out, ROOT / "exercises", ["act1-hierarchy"]) == 1
    assert {k: v for k, v in fake.options.items() if k != "runtime_env"} == wanted
    assert fake.options.get("runtime_env", {}).get("env_vars", {}).get("AUTOGRADER_DEVICE") == device
    printed = capsys.readouterr().out
    assert f"1 not graded (their task failed: act1-hierarchy/{klass.BOB})" in printed and "0 already graded, 1 graded" in printed
    assert (out / "act1-hierarchy" / f"{klass.ALICE}.json").exists() and not (out / "act1-hierarchy" / f"{klass.BOB}.json").exists()
    assert [r["student"] for r in _csv(out / "act1-hierarchy-totals.csv")] == [klass.ALICE]
    # The next run hands each task the fingerprint on file, so a graded student is not graded again.
    ray_engine._grade(fake, args, tmp_path / "submitted", out, ROOT / "exercises", ["act1-hierarchy"])
    assert [known for _, student, known in fake.calls[2:]] == ["f", None]
