"""A small class for the teaching loop: three students, two acts. The CPU test
(tests/test_classroom.py) hands it in through nbgrader's own commands; the GPU run
(tests/gpu/grade_class.py) grades the same notebooks on a GPU.

- alice_liddell_2026 hands in the reference solutions of vector_add, saxpy (CuPy: needs a GPU) and
  gpu_generations (pure Python): full marks for what a machine can grade, NEEDS GPU for the rest.
- bob_the_builder_2026 hands in vector_add untouched (zero) and gpu_generations with its last graded
  cell deleted (TAMPERED; nbgrader marks it for manual grading).
- carol_danvers_2026 hands in vector_add with a cell that replaces the grader by a lambda claiming 5
  points in 2-point cells; she hands in nothing for Act 1.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

ACTS = ("act0-start", "act1-hierarchy")
ALICE, BOB, CAROL = "alice_liddell_2026", "bob_the_builder_2026", "carol_danvers_2026"
STUDENTS = (ALICE, BOB, CAROL)
OVERCLAIM = "import autograder\nautograder.grade_correctness = lambda *args: 5.0\nautograder.grade_speed = lambda *args: 5.0\n"
DELETED = "time_bounds_correctness"


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _with_cell_after_answer(nb: dict, source: str) -> dict:
    nb = copy.deepcopy(nb)
    at = next(i for i, c in enumerate(nb["cells"]) if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    nb["cells"].insert(at + 1, {"cell_type": "code", "id": "learner-extra", "metadata": {}, "execution_count": None, "outputs": [], "source": source})
    return nb


def _without_cell(nb: dict, grade_id: str) -> dict:
    nb = copy.deepcopy(nb)
    nb["cells"] = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != grade_id]
    return nb


def handed_in(release: Path, solutions: Path) -> dict:
    """student -> act -> notebook file name -> notebook (a dict), what each student submits."""
    return {
        ALICE: {
            "act0-start": {name: _read(solutions / "act0-start" / name) for name in ("vector_add.ipynb", "saxpy.ipynb")},
            "act1-hierarchy": {"gpu_generations.ipynb": _read(solutions / "act1-hierarchy" / "gpu_generations.ipynb")},
        },
        BOB: {
            "act0-start": {"vector_add.ipynb": _read(release / "act0-start" / "vector_add.ipynb")},
            "act1-hierarchy": {"gpu_generations.ipynb": _without_cell(_read(release / "act1-hierarchy" / "gpu_generations.ipynb"), DELETED)},
        },
        CAROL: {
            "act0-start": {"vector_add.ipynb": _with_cell_after_answer(_read(release / "act0-start" / "vector_add.ipynb"), OVERCLAIM)},
        },
    }


def write_submitted(submitted: Path, release: Path, solutions: Path) -> None:
    """The class as nbgrader's collect step leaves it: submitted/<student>/<act>/<notebook>.ipynb."""
    for student, acts in handed_in(release, solutions).items():
        for act, notebooks in acts.items():
            folder = submitted / student / act
            folder.mkdir(parents=True, exist_ok=True)
            for name, nb in notebooks.items():
                (folder / name).write_text(json.dumps(nb))
