# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Gets round the refused import by loading the problem module from its file, then widens the
# problem's tolerance and zeroes its byte count (the floor) in place. Those objects are the
# worker's own copies: the judge's problem is untouched, so the zeros this returns fail.
import importlib.util
import os

import torch

import autograder

path = os.path.join(os.path.dirname(autograder.__file__), "problems", "act0.py")
try:
    spec = importlib.util.spec_from_file_location("borrowed_act0", path)
    borrowed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(borrowed)
    borrowed.vector_add.tolerance_factor = 1e30
    borrowed.vector_add.bytes_moved = lambda n: 0.0
except Exception:  # noqa: BLE001 -- whatever happens, the zeros below are the answer
    pass


def vector_add(x, y):
    return torch.zeros_like(x)
