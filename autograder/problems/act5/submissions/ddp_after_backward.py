# expect: FAIL
# problem: act5.ddp_buckets
# entry: ddp_step
# devices: cpu cuda
# The right buckets, all-reduced only after the backward pass: right gradients, nothing overlapped.
import torch
import torch.distributed as dist

from autograder.ddp_model import forward_loss


def ddp_step(params, x, y, bucket_cap):
    world = dist.get_world_size()
    params = [p.detach().clone().requires_grad_(True) for p in params]
    order = []
    for p in params:
        p.register_post_accumulate_grad_hook(order.append)
    forward_loss(params, x, y).backward()
    buckets, current = [], []
    for p in order:
        current.append(p)
        if sum(q.numel() for q in current) >= bucket_cap:
            buckets.append(current)
            current = []
    if current:
        buckets.append(current)
    for members in buckets:
        flat = torch.cat([p.grad.reshape(-1) for p in members])
        dist.all_reduce(flat)
        offset = 0
        for p in members:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p) / world)
            offset += p.numel()
    return tuple(p.grad for p in params)
