# expect: REJECT
# problem: act5.ddp_buckets
# entry: ddp_step
# devices: cpu cuda
# PyTorch's own DistributedDataParallel does the bucketing: the library, not the learner.
import torch
import torch.distributed as dist


def forward_loss(params, x, y):
    h = x
    for i in range(3):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < 2:
            h = torch.tanh(h)
    return ((h - y) ** 2).sum(dim=1).mean()


class Stack(torch.nn.Module):
    def __init__(self, params):
        super().__init__()
        self.weights = torch.nn.ParameterList([torch.nn.Parameter(p.detach().clone()) for p in params])

    def forward(self, x, y):
        return forward_loss(list(self.weights), x, y)


def ddp_step(params, x, y, bucket_cap):
    model = torch.nn.parallel.DistributedDataParallel(Stack(params), bucket_cap_mb=bucket_cap * 4 / 2**20)
    model(x, y).backward()
    return tuple(p.grad for p in model.module.weights)
