# expect: REJECT
# devices: cpu cuda
# torch.softmax does the work: right answers, not the learner's kernel.
import torch


def softmax(x):
    return torch.softmax(x, dim=-1)
