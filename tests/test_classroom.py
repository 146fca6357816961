"""The teaching loop for a small class (tests/class_of_three.py: three students, two acts), through
nbgrader's own commands with the course's id and its private exchange, then through
`python -m autograder class` on a local pool of CPU worker processes (the code path that spreads a
class over GPUs), on this machine without a GPU: what a CPU can award is awarded, what needs a GPU
says NEEDS GPU everywhere (gradebook, feedback, validate, CSV), tampering is flagged, nothing is
written outside the course folder and no kernel warns about TCP. One course, shared by every test."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder import class_csv, graded_cells, nbgrader_gradebook, nbgrader_plugin, student_records, verdict
from tests import class_of_three as klass

ROOT = Path(__file__).resolve().parent.parent
NBGRADER = [sys.executable, "-m", "nbgrader"]
COURSE_ID = "gpu-brrr"
TCP_WARNING = "running over TCP without encryption"


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p), "AUTOGRADER_DEVICE": "cpu"}


def _run(args, cwd, log: list | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900, env=_env())
    if log is not None:
        log.append(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _as_student(course: Path) -> list[str]:
    # What a student's own nbgrader_config.py says (book/teaching/index.md): the course and where its exchange is.
    return [f"--course={COURSE_ID}", f"--Exchange.root={course / 'exchange'}"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    course = base / "course"
    for act in klass.ACTS:
        shutil.copytree(ROOT / "solutions" / act, course / "solutions" / act)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    log: list[str] = []
    for act in klass.ACTS:
        _run([*NBGRADER, "generate_assignment", act, "--force"], course, log)
        _run([*NBGRADER, "release_assignment", act], course, log)
    handed_in = klass.handed_in(course / "exercises", course / "solutions")

    def hand_in(student: str) -> None:
        home = base / "students" / student
        home.mkdir(parents=True)
        for act, notebooks in handed_in[student].items():
            _run([*NBGRADER, "fetch_assignment", act, *_as_student(course)], home, log)
            for path in (home / act).glob("*.ipynb"):
                path.unlink()
            for name, nb in notebooks.items():
                (home / act / name).write_text(json.dumps(nb))
            _run([*NBGRADER, "submit", act, *_as_student(course), f"--student={student}", f"--Exchange.cache={home / '.cache'}"], home, log)

    # Students work side by side, as in a class (and each nbgrader command takes seconds to start).
    with ThreadPoolExecutor(len(handed_in)) as pool:
        list(pool.map(hand_in, handed_in))
    for act in klass.ACTS:
        _run([*NBGRADER, "collect", act], course, log)
        _run([*NBGRADER, "autograde", act], course, log)
    _run([*NBGRADER, "generate_feedback", "act0-start"], course, log)
    cli = _run([sys.executable, "-m", "autograder", "class", "submitted", "--workers", "2"], course, log)
    return {"path": course, "log": log, "cli": cli.stdout}


def _gradebook(course: Path):
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def _csv(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_release_fetch_submit_collect_use_the_course_folder_only(course):
    path = course["path"]
    log = "\n".join(course["log"])
    assert "Creating exchange directory: /usr" not in log and "No course id" not in log
    assert (path / "exchange" / COURSE_ID / "outbound" / "act0-start" / "vector_add.ipynb").exists()
    for student, acts in klass.handed_in(path / "exercises", path / "solutions").items():
        for act, notebooks in acts.items():
            assert sorted(p.name for p in (path / "submitted" / student / act).glob("*.ipynb")) == sorted(notebooks)
    # Every kernel spoke over a Unix socket in the course folder: no TCP warning, no socket left.
    assert TCP_WARNING not in log
    assert not any((path / ".kernels").iterdir())


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_needs_gpu_is_a_status_in_the_gradebook_not_a_silent_zero(course):
    with _gradebook(course["path"]) as gb:
        correctness = gb.find_grade("vector_add_correctness", "vector_add", "act0-start", klass.ALICE)
        speed = gb.find_grade("vector_add_speed", "vector_add", "act0-start", klass.ALICE)
        assert (correctness.auto_score, correctness.needs_manual_grade) == (2.0, False)
        assert (speed.auto_score, speed.needs_manual_grade) == (0.0, True)
        for grade_id in ("saxpy_correctness", "saxpy_speed"):
            assert gb.find_grade(grade_id, "saxpy", "act0-start", klass.ALICE).needs_manual_grade
        comment = gb.find_comment("saxpy_solution", "saxpy", "act0-start", klass.ALICE).auto_comment
        assert "NEEDS GPU" in comment and "saxpy_correctness, saxpy_speed" in comment
        # Bob's untouched exercise failed on its own: its speed zero is a verdict, not a GPU's absence.
        bob_speed = gb.find_grade("vector_add_speed", "vector_add", "act0-start", klass.BOB)
        assert (bob_speed.auto_score, bob_speed.needs_manual_grade) == (0.0, False)
        # Pure Python exercises are fully graded on a CPU.
        assert gb.find_grade("time_bounds_correctness", "gpu_generations", "act1-hierarchy", klass.ALICE).auto_score == 2.0


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_feedback_says_needs_gpu(course):
    feedback = (course["path"] / "feedback" / klass.ALICE / "act0-start" / "saxpy.html").read_text()
    assert "correctness: NEEDS GPU, 0.00 / 2 points" in feedback and "need an NVIDIA GPU" in feedback
    # The gradebook's comment on the answer cell reaches the feedback too.
    assert "NEEDS GPU: saxpy_correctness, saxpy_speed could not be graded on this machine" in feedback


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_a_lambda_claiming_more_points_than_a_cell_is_worth_is_flagged(course):
    with _gradebook(course["path"]) as gb:
        notebook = gb.find_submission_notebook("vector_add", "act0-start", klass.CAROL)
        assert notebook.flagged
        assert all(grade.auto_score == 0.0 for grade in notebook.grades)
        comment = gb.find_comment("vector_add_solution", "vector_add", "act0-start", klass.CAROL).auto_comment
        assert "TAMPERED" in comment and "returned 5" in comment
        assert not gb.find_submission_notebook("vector_add", "act0-start", klass.ALICE).flagged


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_a_deleted_graded_cell_is_left_for_the_instructor(course):
    with _gradebook(course["path"]) as gb:
        deleted = gb.find_grade(klass.DELETED, "gpu_generations", "act1-hierarchy", klass.BOB)
        assert deleted.auto_score is None and deleted.needs_manual_grade


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_class_csv_has_full_names_statuses_and_totals(course):
    out = course["path"] / "grades"
    for student in klass.STUDENTS:
        assert student in course["cli"]
    rows = {(r["student"], r["exercise"]): r for r in _csv(out / "act0-start.csv")}
    assert rows[klass.ALICE, "act0.vector_add"]["status"] == verdict.NEEDS_GPU and float(rows[klass.ALICE, "act0.vector_add"]["points"]) == 2.0
    assert float(rows[klass.ALICE, "act0.vector_add"]["max_points_here"]) == 2.0 and float(rows[klass.ALICE, "act0.vector_add"]["max_points"]) == 4.0
    assert rows[klass.ALICE, "act0.saxpy"]["status"] == verdict.NEEDS_GPU and float(rows[klass.ALICE, "act0.saxpy"]["max_points_here"]) == 0.0
    assert rows[klass.BOB, "act0.vector_add"]["status"] in ("ERROR", "FAIL") and "NotImplementedError" in rows[klass.BOB, "act0.vector_add"]["note"]
    assert rows[klass.BOB, "act0.saxpy"]["status"] == class_csv.MISSING
    assert float(rows[klass.CAROL, "act0.vector_add"]["points"]) == 0.0
    act1 = {(r["student"], r["exercise"]): r for r in _csv(out / "act1-hierarchy.csv")}
    tampered = act1[klass.BOB, "act1.time_bounds"]
    assert tampered["status"] == class_csv.TAMPERED and f"graded cell {klass.DELETED} was deleted" in tampered["note"]
    assert act1[klass.ALICE, "act1.time_bounds"]["status"] == "PASS"
    assert not any(student == klass.CAROL for student, _ in act1)  # she handed in nothing for Act 1
    totals = {r["student"]: r for r in _csv(out / "act1-hierarchy-totals.csv")}
    assert totals[klass.BOB]["review"] == "yes" and totals[klass.ALICE]["review"] == ""
    alice = totals[klass.ALICE]
    # Full marks for the one Python notebook she handed in (4 points); exercise 1.5's 3, not handed in, count here too.
    assert float(alice["points"]) == 4.0 and float(alice["max_points_here"]) == 7.0 and float(alice["needs_gpu_points"]) == 12.0
    assert float(alice["seconds"]) > 0


def _cli_here(course: dict, monkeypatch, *args) -> None:
    """The command line in this process (its start-up costs seconds a subprocess would pay again)."""
    from autograder import cli

    monkeypatch.chdir(course["path"])
    monkeypatch.setenv("AUTOGRADER_DEVICE", "cpu")
    assert cli.main(list(args)) == 0


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_a_graded_student_is_not_graded_again(course, monkeypatch, capsys):
    _cli_here(course, monkeypatch, "class", "submitted", "--assignment", "act0-start")
    assert "act0-start: 3 students, 3 already graded, 0 to grade" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_shards_of_a_job_array_merge_into_the_same_csv(course, monkeypatch):
    path = course["path"]
    for k in range(2):
        _cli_here(course, monkeypatch, "class", "submitted", "--assignment", "act1-hierarchy", "--shard", f"{k}/2", "--out", "sharded", "--no-merge")
    assert not (path / "sharded" / "act1-hierarchy.csv").exists()
    _cli_here(course, monkeypatch, "class", "submitted", "--assignment", "act1-hierarchy", "--out", "sharded", "--merge-only")
    assert _csv(path / "sharded" / "act1-hierarchy.csv") == _csv(path / "grades" / "act1-hierarchy.csv")


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_validate_names_what_a_cpu_cannot_check(course):
    proc = _run([*NBGRADER, "validate", f"submitted/{klass.ALICE}/act0-start/saxpy.ipynb"], course["path"])
    out = proc.stdout + proc.stderr
    assert "This machine has no GPU: 2 graded cell(s) cannot be checked here (saxpy_correctness, saxpy_speed)" in out
    assert out.count("NEEDS GPU: this cell's 2 points are graded only on a machine with an NVIDIA GPU") == 2
    assert "Partial credit" not in out and TCP_WARNING not in out


def test_validate_says_why_a_cell_earned_less_than_its_points():
    failed = {"status": "ERROR", "points": 0.0, "message": "your function raised NotImplementedError at size 1"}
    assert nbgrader_plugin.validate_note(failed, 2.0) == "ERROR: 0 of 2 points: your function raised NotImplementedError at size 1"
    slow = {"status": "PASS", "points": 1.25, "message": ""}
    assert nbgrader_plugin.validate_note(slow, 2.0) == "PASS: 1.25 of 2 points"


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_gpu_scores_are_written_into_the_gradebook(course, tmp_path):
    """The import a GPU grading ends with, on a copy of the class's gradebook: a record as a GPU
    writes it (Alice's vector_add graded in full: 2 + 1.5 points) replaces the CPU's NEEDS GPU."""
    path = course["path"]
    shutil.copy(path / "gradebook.db", tmp_path / "gradebook.db")
    record = json.loads((path / "grades" / "act0-start" / f"{klass.ALICE}.json").read_text())
    for row in record["rows"]:
        if row["exercise"] == "act0.vector_add":
            row.update(points=3.5, speed_points=1.5, status="PASS", parts={"correctness": "PASS", "speed": "PASS", "all": "PASS"})
    student_records.write_record(tmp_path / "gpu", {**record, "device": "cuda"})
    written = nbgrader_gradebook.write_gradebook(tmp_path / "gpu", f"sqlite:///{tmp_path / 'gradebook.db'}", "act0-start")
    assert written == 2  # vector_add's two cells; saxpy still NEEDS GPU, so left as it is
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        speed = gb.find_grade("vector_add_speed", "vector_add", "act0-start", klass.ALICE)
        assert (speed.auto_score, speed.needs_manual_grade) == (1.5, False)
        assert gb.find_grade("saxpy_speed", "saxpy", "act0-start", klass.ALICE).needs_manual_grade


@pytest.mark.slow
@pytest.mark.xdist_group("classroom")
def test_cli_gradebook_command_writes_what_a_cpu_graded(course, monkeypatch, capsys):
    _cli_here(course, monkeypatch, "gradebook", "--assignment", "act1-hierarchy")
    assert "act1-hierarchy: wrote" in capsys.readouterr().out
    with _gradebook(course["path"]) as gb:
        assert gb.find_grade("peak_rates_correctness", "gpu_generations", "act1-hierarchy", klass.ALICE).auto_score == 1.0
        # Bob's notebook was tampered with: its scores are written, its cells still wait for a look.
        assert gb.find_grade("peak_rates_correctness", "gpu_generations", "act1-hierarchy", klass.BOB).needs_manual_grade


def test_kernel_claims_are_read_only_from_results():
    import nbformat

    def cell(*outputs):
        node = nbformat.v4.new_code_cell('autograder.grade_correctness("act0.vector_add", vector_add)')
        node.outputs = list(outputs)
        return node

    stub = nbformat.v4.new_output("execute_result", data={"text/plain": "0.0"}, execution_count=1)
    claim = nbformat.v4.new_output("execute_result", data={"text/plain": "5.0"}, execution_count=1)
    error = nbformat.v4.new_output("error", ename="NameError", evalue="vector_add", traceback=[])
    assert nbgrader_plugin._kernel_claim(cell(stub)) is None
    assert nbgrader_plugin._kernel_claim(cell(error)) is None
    assert nbgrader_plugin._kernel_claim(cell(claim)) == 5.0


def test_the_release_check_finds_deleted_edited_and_added_cells(tmp_path):
    release = ROOT / "exercises" / "act0-start" / "vector_add.ipynb"
    released = graded_cells.released_cells(release)
    nb = json.loads(release.read_text())
    assert graded_cells.tampering(release, released) == []
    graded = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    graded[0]["source"] = "2.0"
    graded[1]["metadata"]["nbgrader"]["grade_id"] = "my_own_cell"
    path = tmp_path / "vector_add.ipynb"
    path.write_text(json.dumps(nb))
    assert graded_cells.tampering(path, released) == [
        "graded cell vector_add_correctness was edited",
        "graded cell vector_add_speed was deleted",
        "graded cell my_own_cell was added (not in the release)",
    ]
