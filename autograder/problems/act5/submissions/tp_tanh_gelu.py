# expect: FAIL
# problem: act5.tp_mlp
# devices: cpu cuda
# The tanh approximation of GeLU: every collective right, every number off by about 1e-3.
import torch
import torch.distributed as dist
import torch.nn.functional as F


class _SumOverRanks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, partial):
        total = partial.clone()
        dist.all_reduce(total)
        return total

    @staticmethod
    def backward(ctx, grad):
        return grad


class _CopyToRanks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        total = grad.clone()
        dist.all_reduce(total)
        return total


def tp_mlp(x, w1, b1, w2, b2, grad_out):
    x, w1, b1, w2, b2 = [t.detach().requires_grad_(True) for t in (x, w1, b1, w2, b2)]
    out = _SumOverRanks.apply(F.gelu(_CopyToRanks.apply(x) @ w1 + b1, approximate="tanh") @ w2) + b2
    out.backward(grad_out)
    return out.detach(), x.grad, w1.grad, b1.grad, w2.grad, b2.grad
