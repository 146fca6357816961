# expect: FAIL
# problem: act5.ddp_buckets
# entry: ddp_step
# devices: cpu cuda
# One all-reduce per parameter, each from its hook: overlapped, but no buckets (a latency per tensor).
import torch.distributed as dist

from autograder.ddp_model import forward_loss


def ddp_step(params, x, y, bucket_cap):
    world = dist.get_world_size()
    params = [p.detach().clone().requires_grad_(True) for p in params]
    pending = []
    for p in params:
        p.register_post_accumulate_grad_hook(lambda q: pending.append((dist.all_reduce(q.grad, async_op=True), q)))
    forward_loss(params, x, y).backward()
    for work, q in pending:
        work.wait()
        q.grad.div_(world)
    return tuple(p.grad for p in params)
