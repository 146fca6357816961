"""The instructor's guide's GPU measurements: `python -m autograder class` on a GPU machine, spread
over every GPU of the host (one worker per GPU), for

- the class of tests/class_of_three.py (three students, Acts 0 and 1), the class the CPU test
  (tests/test_classroom.py) hands in through nbgrader; and
- two students who hand in every act: ``reference`` (every solution notebook: the longest a
  student's grading can take, every kernel compiled and timed) and ``blank`` (every exercise
  untouched: the shortest).

It writes OUT/submitted/ (the class) and OUT/grades/ (each student's record with its seconds, one
CSV per act and the per-student totals, whose ``seconds`` column is the time per student per act
that book/teaching/index.md asks for). CLASS_ASSIGNMENTS="act0-start act4-kernels" grades only those
acts, for a call too short for all of them.

    python tests/gpu/grade_class.py OUT      # run by tests/gpu/run.sh's "class" step (make test-gpu-class)
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import cli  # noqa: E402
from tests import class_of_three  # noqa: E402


def build(submitted: Path) -> None:
    class_of_three.write_submitted(submitted, ROOT / "exercises", ROOT / "solutions")
    for student, folder in (("reference", ROOT / "solutions"), ("blank", ROOT / "exercises")):
        for act in sorted(p for p in folder.iterdir() if p.is_dir()):
            shutil.copytree(act, submitted / student / act.name, dirs_exist_ok=True)


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    submitted = out / "submitted"
    if submitted.exists():
        shutil.rmtree(submitted)
    build(submitted)
    only = [arg for act in os.environ.get("CLASS_ASSIGNMENTS", "").split() for arg in ("--assignment", act)]
    return cli.main(["class", str(submitted), "--release", str(ROOT / "exercises"), "--out", str(out / "grades"), *only])


if __name__ == "__main__":
    sys.exit(main())
