# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Does the work once and replays that answer afterwards.
import torch

_answer = []


def vector_add(x, y):
    if not _answer:
        out = torch.empty_like(x)
        out.copy_(x)
        out.add_(y)
        _answer.append(out)
    return _answer[0].clone()
