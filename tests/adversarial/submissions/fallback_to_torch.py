# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# A kernel that always "fails" and a fallback that quietly calls the library.
import torch


def broken_kernel(x, y):
    raise RuntimeError("not implemented")


def vector_add(x, y):
    try:
        return broken_kernel(x, y)
    except RuntimeError:
        return x + y
