"""Single source: exercises/ is exactly what nbgrader generates from solutions/; solutions validate
(every cell this machine can grade), exercises do not; a real autograde gives a submitted solution
full marks for what is gradable here and an untouched exercise zero, with readable feedback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import problem as problem_mod
from autograder import registry

ROOT = Path(__file__).resolve().parent.parent
NBGRADER = [sys.executable, "-m", "nbgrader"]
ACTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
SOLUTIONS = sorted((ROOT / "solutions").rglob("*.ipynb"))


def _course_copy(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    course.mkdir()
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    return course


def _run(args, cwd) -> subprocess.CompletedProcess:
    # nbgrader_config.py imports autograder, and the kernels grade with it: this checkout's copy.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


GRADED_CALL = re.compile(r"autograder\.(grade_correctness|grade_speed|grade)\(\s*[\"']([\w.]+)[\"']")


def _cells_gradable_here(nb: dict) -> dict:
    """grade_id -> points this CPU machine can award: correctness of Triton and pure-Python
    exercises; nothing for CuPy exercises (they need a GPU) or for any speed cell timed on a GPU."""
    gradable = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            call = GRADED_CALL.search("".join(cell["source"]))
            assert call, f"graded cell {meta['grade_id']} does not call the autograder"
            part, name = call.groups()
            problem = registry.get(name)
            # An interactive exercise (act6.scheduler) measures its speed in its own units: graded anywhere.
            cpu_gradable = (part != "grade_speed" or problem_mod.is_interactive(problem)) and not problem.needs_gpu
            gradable[meta["grade_id"]] = meta["points"] if cpu_gradable else 0
    return gradable


def _normalised(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    course = _course_copy(tmp_path_factory.mktemp("generate"))
    for act in ACTS:
        proc = _run([*NBGRADER, "generate_assignment", act, "--force"], course)
        assert proc.returncode == 0, proc.stderr
    return course


def test_exercises_are_exactly_what_generation_produces(generated):
    committed = sorted(p.relative_to(ROOT / "exercises") for p in (ROOT / "exercises").rglob("*.ipynb"))
    produced = sorted(p.relative_to(generated / "exercises") for p in (generated / "exercises").rglob("*.ipynb"))
    assert committed == produced, "run `make exercises` and commit exercises/"
    for rel in committed:
        assert _normalised(ROOT / "exercises" / rel) == _normalised(generated / "exercises" / rel), f"exercises/{rel} is stale: run `make exercises`"


def test_exercises_have_no_outputs_and_no_answers():
    for path in (ROOT / "exercises").rglob("*.ipynb"):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            assert not cell.get("outputs"), f"{path} has outputs"
            assert "BEGIN SOLUTION" not in "".join(cell["source"])


def test_notebooks_use_the_repository_url_from_config():
    import yaml

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    for path in [*SOLUTIONS, *(ROOT / "exercises").rglob("*.ipynb")]:
        text = path.read_text()
        assert f"git+{url}" in text, f"{path} installs the package from another URL"
        assert "colab.research.google.com/github/" + url.removeprefix("https://github.com/") in text


def _validate(path: Path, *extra) -> subprocess.CompletedProcess:
    return _run([*NBGRADER, "validate", str(path), *extra], path.parent)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_validates_on_every_cell_gradable_here(path):
    proc = _validate(path)
    out = proc.stdout + proc.stderr
    nb = json.loads(path.read_text())
    gradable = _cells_gradable_here(nb)
    # Each cell that needs a GPU fails here with partial credit; every other graded cell passes.
    failures = out.count("The following cell failed:")
    not_gradable_here = sum(1 for v in gradable.values() if v == 0)
    assert failures == not_gradable_here, out
    assert "Error" not in out.replace("NameError", "").replace("Traceback", ""), out


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").rglob("*.ipynb")), ids=lambda p: p.stem)
def test_untouched_exercise_fails_validation(path):
    proc = _validate(path)
    out = proc.stdout + proc.stderr
    assert "VALIDATION FAILED" in out or "NotImplementedError" in out, out


def test_autograde_gives_solutions_full_gradable_marks_and_exercises_zero(generated):
    course = generated
    for student, folder in (("solution", course / "solutions"), ("untouched", course / "exercises")):
        for act in ACTS:
            target = course / "submitted" / student / act
            shutil.copytree(folder / act, target)
    for act in ACTS:
        proc = _run([*NBGRADER, "autograde", act, "--force"], course)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        proc = _run([*NBGRADER, "generate_feedback", act, "--force"], course)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for act in ACTS:
            for path in sorted((course / "solutions" / act).glob("*.ipynb")):
                expected = _cells_gradable_here(json.loads(path.read_text()))
                for student, full in (("solution", True), ("untouched", False)):
                    for grade_id, points in expected.items():
                        grade = gb.find_grade(grade_id, path.stem, act, student)
                        assert grade.auto_score == (points if full else 0), (student, grade_id, grade.auto_score)
    feedback = (course / "feedback" / "solution" / "act0-start" / "vector_add.html").read_text()
    assert "cases correct" in feedback and "needs a GPU" in feedback
    untouched = (course / "feedback" / "untouched" / "act0-start" / "vector_add.html").read_text()
    assert "NotImplementedError" in untouched or "no function named" in untouched


def _tampered_copy(source: Path, target: Path, redefine: bool) -> None:
    """The untouched exercise with its locked graded cells edited to claim full marks or deleted,
    and optionally a cell that redefines the grader's functions and reads nbgrader's variables."""
    nb = json.loads(source.read_text())
    cells = []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            if meta["grade_id"].endswith("speed"):
                continue
            cell["source"] = f"{meta['points']}"
        cells.append(cell)
    if redefine:
        cheat = {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": "import os\nimport autograder\nprint(sorted(k for k in os.environ if 'NBGRADER' in k))\n"
            "autograder.grade_correctness = lambda *args, **kwargs: 2.0\nautograder.grade_speed = lambda *args, **kwargs: 2.0\n",
        }
        cells.insert(2, cheat)
    nb["cells"] = cells
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb))


def test_edited_or_deleted_locked_cells_change_nothing(generated):
    course = generated
    act = "act0-start"
    _tampered_copy(course / "exercises" / act / "vector_add.ipynb", course / "submitted" / "editor" / act / "vector_add.ipynb", redefine=False)
    proc = _run([*NBGRADER, "autograde", act, "--student", "editor", "--force"], course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        # The edited cell is restored from the release and runs the real check.
        assert gb.find_grade("vector_add_correctness", "vector_add", act, "editor").auto_score == 0
        # The deleted cell earns nothing automatically and is flagged for the instructor.
        deleted = gb.find_grade("vector_add_speed", "vector_add", act, "editor")
        assert deleted.auto_score is None and deleted.needs_manual_grade


def test_redefined_helpers_do_not_fool_grading_outside_the_kernel(tmp_path):
    submitted = tmp_path / "act0-start" / "vector_add.ipynb"
    _tampered_copy(ROOT / "exercises" / "act0-start" / "vector_add.ipynb", submitted, redefine=True)
    out = tmp_path / "grades.json"
    proc = _run([sys.executable, "-m", "autograder", "grade", str(submitted.parent), "--json", str(out)], ROOT)
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(out.read_text())["results"]
    assert result["points"] == 0 and result["status"] != "PASS"
