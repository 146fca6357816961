"""Single source: exercises/ is exactly what nbgrader generates from solutions/; solutions validate
(every cell this machine can grade), exercises do not; a real autograde gives a submitted solution
full marks for what is gradable here and an untouched exercise zero, with readable feedback.

Every act is generated and Act 0 autograded once, in the course shared with test_nbgrader_fresh.py
(tests/nbgrader_shared.py). Act 0's notebooks are validated and autograded in every run; the other
acts' round trips (each notebook executed by `nbgrader validate`, then by `nbgrader autograde`) are
marked slow: `make test-all` runs them."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbgrader_shared
import pytest
from nbgrader_shared import ACT, ACTS, NBGRADER, ROOT, checked, run, tampered

from autograder import problem as problem_mod
from autograder import registry

SOLUTIONS = sorted((ROOT / "solutions").rglob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").rglob("*.ipynb"))
SHARED = pytest.mark.xdist_group("nbgrader")


def _every_act_but_the_first_is_slow(paths: list[Path]) -> list:
    return [pytest.param(p, id=p.stem, marks=() if p.parent.name == ACT else pytest.mark.slow) for p in paths]


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


@SHARED
def test_exercises_are_exactly_what_generation_produces(nbgrader_course):
    generated = nbgrader_course
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
    for path in [*SOLUTIONS, *EXERCISES]:
        text = path.read_text()
        assert f"git+{url}" in text, f"{path} installs the package from another URL"
        assert "colab.research.google.com/github/" + url.removeprefix("https://github.com/") in text


def _validate(path: Path, *extra):
    return run([*NBGRADER, "validate", str(path), *extra], path.parent)


@pytest.mark.parametrize("path", _every_act_but_the_first_is_slow(SOLUTIONS))
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


@pytest.mark.parametrize("path", _every_act_but_the_first_is_slow(EXERCISES))
def test_untouched_exercise_fails_validation(path):
    proc = _validate(path)
    out = proc.stdout + proc.stderr
    assert "VALIDATION FAILED" in out or "NotImplementedError" in out, out


def _check_autograded(course: Path, acts: list[str]) -> None:
    """Every graded cell of every notebook of ``acts``: full gradable marks for the solution, zero for
    the untouched release copy."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for act in acts:
            for path in sorted((course / "solutions" / act).glob("*.ipynb")):
                expected = _cells_gradable_here(json.loads(path.read_text()))
                for student, full in (("solution", True), ("untouched", False)):
                    for grade_id, points in expected.items():
                        grade = gb.find_grade(grade_id, path.stem, act, student)
                        assert grade.auto_score == (points if full else 0), (act, student, grade_id, grade.auto_score)


@SHARED
def test_autograde_gives_solutions_full_gradable_marks_and_exercises_zero(nbgrader_course):
    _check_autograded(nbgrader_course, [ACT])
    feedback = (nbgrader_course / "feedback" / "solution" / ACT / "vector_add.html").read_text()
    assert "cases correct" in feedback and "needs a GPU" in feedback
    untouched = (nbgrader_course / "feedback" / "untouched" / ACT / "vector_add.html").read_text()
    assert "NotImplementedError" in untouched or "no function named" in untouched


@SHARED
@pytest.mark.slow
def test_autograde_of_every_other_act(nbgrader_course):
    others = [act for act in ACTS if act != ACT]
    for act in others:
        nbgrader_shared.submit_solutions_and_release(nbgrader_course, act)
        nbgrader_shared.autograde(nbgrader_course, act)
    _check_autograded(nbgrader_course, others)


@SHARED
def test_edited_or_deleted_locked_cells_change_nothing(nbgrader_course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{nbgrader_course / 'gradebook.db'}") as gb:
        # The edited cell is restored from the release and runs the real check.
        assert gb.find_grade("vector_add_correctness", "vector_add", ACT, "editor").auto_score == 0
        # The deleted cell earns nothing automatically and is flagged for the instructor.
        deleted = gb.find_grade("vector_add_speed", "vector_add", ACT, "editor")
        assert deleted.auto_score is None and deleted.needs_manual_grade


@SHARED
def test_a_notebook_claiming_an_old_metadata_schema_is_graded_and_stops_no_one(nbgrader_course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{nbgrader_course / 'gradebook.db'}") as gb:
        assert gb.find_grade("vector_add_correctness", "vector_add", ACT, "old_schema").auto_score == 2.0
        # The students after it in the run were graded (the solution's full marks: _check_autograded).
        assert gb.find_grade("vector_add_correctness", "vector_add", ACT, "untouched").auto_score == 0


def test_redefined_helpers_do_not_fool_grading_outside_the_kernel(tmp_path):
    submitted = tmp_path / ACT / "vector_add.ipynb"
    submitted.parent.mkdir()
    submitted.write_text(json.dumps(tampered(ROOT / "exercises" / ACT / "vector_add.ipynb", redefine=True)))
    out = tmp_path / "grades.json"
    checked([sys.executable, "-m", "autograder", "grade", str(submitted.parent), "--json", str(out)], ROOT)
    [result] = json.loads(out.read_text())["results"]
    assert result["points"] == 0 and result["status"] != "PASS"
