"""The command line: doctor, grade (notebooks and folders, bad input included) and bench on a CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {"AUTOGRADER_DEVICE": "cpu", "PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def test_doctor_says_how_each_exercise_is_graded_here():
    proc = _cli("doctor")
    assert proc.returncode == 0, proc.stderr
    assert "Triton interpreter" in proc.stdout
    assert "act0.vector_add" in proc.stdout and "correctness only" in proc.stdout
    assert "act0.saxpy" in proc.stdout and "needs a GPU" in proc.stdout
    assert "(1 point)" in proc.stdout and "(1 points)" not in proc.stdout
    # One column for the languages, however long an exercise's name.
    rows = [line for line in proc.stdout.splitlines() if line.startswith("  act")]
    assert len({line.index(" triton ") if " triton " in line else line.index(" python ") if " python " in line else line.index(" cupy ") for line in rows}) == 1


def test_grade_a_folder_of_solutions(tmp_path):
    out = tmp_path / "grades.json"
    proc = _cli("grade", "solutions/act0-start", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    results = {r["problem"]: r for r in json.loads(out.read_text())["results"]}
    assert results["act0.vector_add"]["status"] == "PASS"
    assert results["act0.vector_add"]["points"] == 2.0
    assert results["act0.saxpy"]["status"] == "NEEDS GPU"
    assert "act0.vector_add" in proc.stdout and "PASS" in proc.stdout


def test_grade_an_untouched_exercise_gives_zero_with_a_reason(tmp_path):
    out = tmp_path / "grades.json"
    proc = _cli("grade", "exercises/act0-start/vector_add.ipynb", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(out.read_text())["results"]
    assert result["points"] == 0
    assert result["status"] in ("ERROR", "FAIL")
    assert "NotImplementedError" in result["message"] or "NotImplementedError" in result.get("traceback", "")


def test_bad_notebooks_are_clear_sentences_and_others_still_graded(tmp_path):
    folder = tmp_path / "act0-start"
    folder.mkdir()
    (folder / "vector_add.ipynb").write_text("{ this is not json")
    (folder / "unrelated.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    good = json.loads((ROOT / "solutions" / "act0-start" / "saxpy.ipynb").read_text())
    (folder / "saxpy.ipynb").write_text(json.dumps(good))
    out = tmp_path / "grades.json"
    proc = _cli("grade", str(folder), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())["results"]
    by_notebook = {Path(r["notebook"]).name: r for r in results}
    assert "cannot read the notebook" in by_notebook["vector_add.ipynb"]["message"]
    assert "no exercise of the course" in by_notebook["unrelated.ipynb"]["message"]
    assert by_notebook["saxpy.ipynb"]["status"] == "NEEDS GPU"


def test_a_misspelled_function_is_named(tmp_path):
    folder = tmp_path / "act0-start"
    folder.mkdir()
    nb = json.loads((ROOT / "solutions" / "act0-start" / "vector_add.ipynb").read_text())
    for cell in nb["cells"]:
        cell["source"] = "".join(cell["source"]).replace("def vector_add(", "def vectoradd(")
    (folder / "vector_add.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "grades.json"
    _cli("grade", str(folder), "--json", str(out))
    [result] = json.loads(out.read_text())["results"]
    assert result["status"] == "ERROR" and "no function named 'vector_add'" in result["message"]


def test_bench_without_a_gpu_says_so(tmp_path):
    proc = _cli("bench", "--out", str(tmp_path / "results"))
    assert proc.returncode == 0
    assert "needs a GPU" in proc.stdout
