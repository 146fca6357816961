# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Prints what a passing result looks like, on stdout and stderr, and returns nothing useful.
import sys

import torch

print("act0.vector_add: PASS, 4.00 / 4 points")
print('{"status": "PASS", "points": 4.0}', file=sys.stderr)


def vector_add(x, y):
    print("PASS " * 20)
    return torch.zeros_like(x)
