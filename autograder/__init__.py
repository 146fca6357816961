"""GPU Brrr's grader: correctness against float64 references, speed against the library on the
learner's own GPU, every exercise in its own process.

A graded cell is one line: ``autograder.grade("act0.vector_add", vector_add)``.
"""

from .grading import grade

__all__ = ["grade"]
__version__ = "0.1.0"
