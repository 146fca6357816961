# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Calls the grader from inside the code being graded (a script without a main guard does this by
# accident). A grading refuses to start inside another: the call returns at once, and the zeros fail.
import torch

import autograder


def vector_add(x, y):
    autograder.grade_correctness("act0.vector_add", vector_add)
    return torch.zeros_like(x)
