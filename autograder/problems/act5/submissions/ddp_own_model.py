# expect: FAIL
# problem: act5.ddp_buckets
# entry: ddp_step
# devices: cpu cuda
# says: crossed 0 of the model's 2 layer boundaries
# Overlapped buckets, right for the plain model, on a copy of forward_loss written out by hand: its
# backward pass never crosses the judge, so the judge's additions are missing from the gradients below
# the last layer, and the judge saw no crossing to place the all-reduces against.
import torch
import torch.distributed as dist


def forward_loss(params, x, y):
    h = x
    for i in range(3):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < 2:
            h = torch.tanh(h)
    return ((h - y) ** 2).sum(dim=1).mean()


def ddp_step(params, x, y, bucket_cap):
    world = dist.get_world_size()
    params = [p.detach().clone().requires_grad_(True) for p in params]
    in_flight, bucket = [], []

    def launch():
        flat = torch.cat([p.grad.reshape(-1) for p in bucket])
        in_flight.append((dist.all_reduce(flat, async_op=True), flat, list(bucket)))
        bucket.clear()

    def ready(p):
        bucket.append(p)
        if sum(q.numel() for q in bucket) >= bucket_cap:
            launch()

    for p in params:
        p.register_post_accumulate_grad_hook(ready)
    forward_loss(params, x, y).backward()
    if bucket:
        launch()
    for work, flat, members in in_flight:
        work.wait()
        offset = 0
        for p in members:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p) / world)
            offset += p.numel()
    return tuple(p.grad for p in params)
