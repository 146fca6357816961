# expect: REJECT
# devices: cpu cuda
# PyTorch does the work: torch.softmax, a multiply and a sum (the profiler sees their kernels; on a
# CPU, their operators).
import torch


def online_softmax(x, v):
    return (torch.softmax(x, dim=-1) * v).sum(dim=-1)
