# expect: FAIL
# problem: act0.vector_add
# devices: cpu
# Raises an exception named like the grader's own out-of-bounds error, hoping the case is excused
# (or the grading ends) rather than failed. A case that raised has no answer: it fails.
import torch


class OutOfBoundsAccess(IndexError):
    pass


def vector_add(x, y):
    if x.numel() > 1:
        raise OutOfBoundsAccess("add_kernel wrote out of bounds")
    return torch.zeros_like(x)
