# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# The library does the work: right answers, not the learner's kernel.
import torch


def vector_add(x, y):
    return torch.add(x, y)
