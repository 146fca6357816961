"""GPU Brrr's grader: correctness against float64 references, speed against the library on the
learner's own GPU, every exercise in its own process.

A graded cell is one line: ``autograder.grade_correctness("act0.vector_add", vector_add)`` and,
in the next cell, ``autograder.grade_speed("act0.vector_add", vector_add)``; each returns its points.
"""

from .cells import grade, grade_correctness, grade_speed
from .setup import ensure_cupy, setup

__all__ = ["ensure_cupy", "grade", "grade_correctness", "grade_speed", "setup"]
__version__ = "0.1.0"
