# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: gc.get_objects
# Walks the garbage collector for a float64 tensor of the output's shape (the grader's reference)
# and returns it rounded to float32. The reference lives in the judge's process: there is none here.
# The sealed worker (autograder.seal) refuses it the garbage collector's objects and rejects the grading.
import gc

import torch


def vector_add(x, y):
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.dtype == torch.float64 and obj.shape == x.shape:
            return obj.float()
    return torch.zeros_like(x)
