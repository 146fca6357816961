# expect: FAIL
# problem: act5.tp_mlp
# devices: cpu cuda
# The forward all-reduce is right, but the input's gradient is left as each rank's partial sum.
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


def tp_mlp(x, w1, b1, w2, b2, grad_out):
    x, w1, b1, w2, b2 = [t.detach().requires_grad_(True) for t in (x, w1, b1, w2, b2)]
    out = _SumOverRanks.apply(F.gelu(x @ w1 + b1) @ w2) + b2
    out.backward(grad_out)
    return out.detach(), x.grad, w1.grad, b1.grad, w2.grad, b2.grad
