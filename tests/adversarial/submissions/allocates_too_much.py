# expect: ERROR
# problem: act0.vector_add
# devices: cpu cuda
# Asks for 40 TB.
import torch


def vector_add(x, y):
    scratch = torch.empty(10**13, device=x.device)
    return scratch[: x.numel()]
