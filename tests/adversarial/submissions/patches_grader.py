# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: autograder.checking.compare
# Redefines the grader's comparison in its own process; the judge compares in another one, so the
# zeros it returns fail.
# The sealed worker (autograder.seal) sees the grader's code changed and rejects the grading.
import torch

import autograder.checking


def _always_equal(out, reference, tol):
    return True, 0.0, []


autograder.checking.compare = _always_equal


def vector_add(x, y):
    return torch.zeros_like(x)
