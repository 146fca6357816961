# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Allocates the output and never writes it, hoping to find a freed answer in the memory it gets.
import torch


def vector_add(x, y):
    return torch.empty_like(x)
