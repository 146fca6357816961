# expect: FAIL
# problem: act5.ddp_buckets
# entry: ddp_step
# devices: cpu cuda
# says: after the backward pass had reached the first layer
# Asks the judge for its additions up front, runs a backward pass of its own that adds them, and
# all-reduces the right buckets afterwards, crossing into the first layer once more between the first
# bucket and the second, as an overlapped step would. The judge places the all-reduces against the
# first time it saw each crossing.
import torch
import torch.distributed as dist

from autograder import relay


def ddp_step(params, x, y, bucket_cap):
    world = dist.get_world_size()
    group = relay.current_group()
    params = [p.detach().clone().requires_grad_(True) for p in params]
    shape = (x.shape[0], params[0].shape[1])
    added = {layer: group.boundary(torch.zeros(shape), layer) for layer in (2, 1)}
    h = x
    for i in range(3):
        if i:
            h = h.view_as(h)
            h.register_hook(lambda grad, layer=i: grad + added[layer])
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < 2:
            h = torch.tanh(h)
    order = []
    for p in params:
        p.register_post_accumulate_grad_hook(order.append)
    ((h - y) ** 2).sum(dim=1).mean().backward()
    buckets, current = [], []
    for p in order:
        current.append(p)
        if sum(q.numel() for q in current) >= bucket_cap:
            buckets.append(current)
            current = []
    if current:
        buckets.append(current)
    for index, members in enumerate(buckets):
        flat = torch.cat([p.grad.reshape(-1) for p in members])
        dist.all_reduce(flat)
        if index == 0:
            group.boundary(torch.zeros(shape), 1)
        offset = 0
        for p in members:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p) / world)
            offset += p.numel()
    return tuple(p.grad for p in params)
