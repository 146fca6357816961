"""The instructor's guide (book/teaching/index.md): its table of the points a CPU can award is the
registry's, its nbgrader commands are the ones tests/test_classroom.py runs, and the class
grading's pieces that need no nbgrader (maxima, statuses, shards) say what they should."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder import classroom, registry, teaching, verdict

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "book" / "teaching" / "index.md"


def test_the_guide_gets_the_registrys_table_when_the_book_is_built():
    source = [GUIDE.read_text()]
    assert teaching.CPU_POINTS_TABLE in source[0]
    teaching._fill_in(None, "book/teaching/index", source)
    assert teaching.CPU_POINTS_TABLE not in source[0]
    assert "| act0-start | `act0.vector_add` | triton | 4 | 2 | speed" in source[0]


def test_each_acts_total_is_what_a_cpu_grading_can_award():
    table = teaching.cpu_points_table()
    for act in {p.notebook.split("/")[0] for p in registry.all_problems()}:
        problems = [p for p in registry.all_problems() if p.notebook.startswith(act + "/")]
        worth, here = sum(p.max_points for p in problems), sum(verdict.max_points_on(p, "cpu") for p in problems)
        assert f"| **{act}** | **total** | | **{worth:g}** | **{here:g}** | |" in table


def test_a_cpu_awards_nothing_for_cupy_and_everything_for_python():
    saxpy, vector_add = registry.get("act0.saxpy"), registry.get("act0.vector_add")
    assert verdict.max_points_on(saxpy, "cpu") == 0 and verdict.max_points_on(saxpy, "cuda") == saxpy.max_points
    assert verdict.max_points_on(vector_add, "cpu") == vector_add.correctness_points
    assert verdict.score(saxpy, verdict.needs_gpu_result(saxpy), "cpu")["max_points_here"] == 0


@pytest.mark.parametrize(
    ("status", "device", "part", "expected"),
    [
        ("PASS", "cpu", "correctness", "PASS"),
        ("PASS", "cpu", "speed", verdict.NEEDS_GPU),
        ("PASS", "cpu", "all", verdict.NEEDS_GPU),
        ("PASS", "cuda", "speed", "PASS"),
        ("FAIL", "cpu", "speed", "FAIL"),
        (verdict.NEEDS_GPU, "cpu", "correctness", verdict.NEEDS_GPU),
    ],
)
def test_a_cells_status_says_needs_gpu_only_where_the_machine_lacked_one(status, device, part, expected):
    assert verdict.part_status({"problem": "act0.vector_add", "status": status, "device": device}, part) == expected


def test_every_nbgrader_command_of_the_guide_is_run_by_the_class_test():
    guide = GUIDE.read_text()
    test = (ROOT / "tests" / "test_classroom.py").read_text()
    used = set(re.findall(r"^nbgrader (\w+)", guide, flags=re.MULTILINE))
    # What the CPU test cannot run: feedback and grades leave through nbgrader's own exchange and
    # export, which read what autograde and generate_feedback wrote.
    not_run = {"release_feedback", "export"}
    assert used - not_run, "the guide lists no nbgrader command"
    for command in used - not_run:
        assert f'"{command}"' in test, f"the guide's `nbgrader {command}` is not run by tests/test_classroom.py"
    for option in ("--shard", "--no-merge", "--merge-only", "--workers"):
        assert option in guide and option in test


def test_the_guides_ray_command_is_run_by_the_ray_test():
    guide = GUIDE.read_text()
    assert "python -m autograder class submitted --ray auto" in guide
    assert '"--ray"' in (ROOT / "tests" / "test_class_ray.py").read_text()


def test_shards_cover_every_student_once():
    names = [f"student{i:02d}" for i in range(7)]
    parts = [classroom.shard(names, f"{k}/3") for k in range(3)]
    assert sorted(sum(parts, [])) == names
    with pytest.raises(ValueError):
        classroom.shard(names, "3/3")


def test_grade_shows_the_whole_path_the_maximum_here_and_writes_a_csv(tmp_path):
    import csv
    import json
    import os
    import subprocess
    import sys

    folder = tmp_path / "submitted" / "a_student_with_a_rather_long_name_2026" / "act0-start"
    folder.mkdir(parents=True)
    (folder / "saxpy.ipynb").write_text((ROOT / "solutions" / "act0-start" / "saxpy.ipynb").read_text())
    env = {**os.environ, "AUTOGRADER_DEVICE": "cpu", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--json", str(tmp_path / "g.json"), "--csv", str(tmp_path / "g.csv")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(folder / "saxpy.ipynb") in proc.stdout
    # A CuPy exercise is worth 4 points, none of which a CPU can award.
    assert re.search(r"NEEDS GPU +0\.00 / 0 +4 ", proc.stdout) and "(4 points need a GPU)" in proc.stdout
    [row] = list(csv.DictReader((tmp_path / "g.csv").open()))
    assert row["status"] == verdict.NEEDS_GPU and row["max_points_here"] == "0.0" and row["needs_gpu_points"] == "4.0"
    assert json.loads((tmp_path / "g.json").read_text())["results"][0]["max_points_here"] == 0
