# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
import torch


def vector_add(x, y):
    return torch.full_like(x, 0.5)
