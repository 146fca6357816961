# expect: REJECT FAIL
# problem: act0.vector_add
# devices: cpu cuda
# says: autograder.checking.compare
# Redefines the grader's comparison in its own process; the judge compares in another one, so the
# zeros it returns fail. Where the worker had loaded that module before the learner's code (a CPU
# grading's worker has), the seal's fingerprint sees it changed and rejects the grading
# (autograder.seal); on a GPU the worker never loads it, the learner's import makes a copy nobody
# consults, and the zeros fail (measured: FAIL, every size wrong, on an H100).
import torch

import autograder.checking


def _always_equal(out, reference, tol):
    return True, 0.0, []


autograder.checking.compare = _always_equal


def vector_add(x, y):
    return torch.zeros_like(x)
