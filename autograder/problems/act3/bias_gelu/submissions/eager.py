# expect: REJECT
# devices: cpu cuda
# Eager PyTorch (two library kernels) handed in as the fused kernel: right answers, no kernel of the learner's.
import torch


def bias_gelu(x, bias):
    return torch.nn.functional.gelu(x + bias)
