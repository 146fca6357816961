# expect: REJECT
# problem: act5.ddp_buckets
# entry: ddp_step
# devices: cpu cuda
# PyTorch's own DistributedDataParallel does the bucketing: the library, not the learner.
import torch

from autograder.ddp_model import forward_loss


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
