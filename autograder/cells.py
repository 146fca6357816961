"""The functions a graded cell calls. Under `nbgrader autograde` they grade nothing: the
instructor's preprocessor (autograder.nbgrader_plugin) grades the notebook's source afresh after
the kernel has run and overwrites these cells' output, so grading here would only be done twice."""

from __future__ import annotations

import os
from collections.abc import Callable

from . import grading

GRADED_OUTSIDE = (
    "{problem}: graded outside this notebook by the instructor's grader (nbgrader autograde with "
    "autograder.nbgrader_plugin); the points recorded for this cell come from that grading."
)


def _graded_outside(problem_name: str) -> bool:
    # nbgrader's autograde sets NBGRADER_EXECUTION for the kernel it starts. Nothing depends on the
    # learner's code leaving it alone: the preprocessor replaces whatever this cell returns.
    if os.environ.get("NBGRADER_EXECUTION") != "autograde":
        return False
    print(GRADED_OUTSIDE.format(problem=problem_name))
    return True


def grade(problem_name: str, fn: Callable) -> float:
    """Grade ``fn`` for the exercise ``problem_name``; return all the points earned.

    The learner's code runs in a separate process; the report is printed (and the roofline drawn)
    here. Nothing is written to stderr: nbgrader would give a graded cell zero for it.
    """
    return 0.0 if _graded_outside(problem_name) else grading.grade(problem_name, fn)


def grade_correctness(problem_name: str, fn: Callable) -> float:
    """The correctness cell of an exercise: its points, and the per-case report."""
    return 0.0 if _graded_outside(problem_name) else grading.grade_correctness(problem_name, fn)


def grade_speed(problem_name: str, fn: Callable) -> float:
    """The speed cell of an exercise: its points (none unless correct and honest), the per-size
    report and the roofline."""
    return 0.0 if _graded_outside(problem_name) else grading.grade_speed(problem_name, fn)
