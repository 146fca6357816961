# expect: REJECT
# problem: act5.tp_mlp
# devices: cpu cuda
# Gathers the weight shards and runs the unsharded MLP: right answers, no tensor parallelism.
import torch
import torch.distributed as dist
import torch.nn.functional as F


def tp_mlp(x, w1, b1, w2, b2, grad_out):
    world, rank = dist.get_world_size(), dist.get_rank()
    w1s = [torch.empty_like(w1) for _ in range(world)]
    b1s = [torch.empty_like(b1) for _ in range(world)]
    w2s = [torch.empty_like(w2) for _ in range(world)]
    dist.all_gather(w1s, w1.contiguous())
    dist.all_gather(b1s, b1.contiguous())
    dist.all_gather(w2s, w2.contiguous())
    leaves = [t.detach().requires_grad_(True) for t in (x, torch.cat(w1s, 1), torch.cat(b1s), torch.cat(w2s, 0), b2)]
    xx, ww1, bb1, ww2, bb2 = leaves
    out = F.gelu(xx @ ww1 + bb1) @ ww2 + bb2
    out.backward(grad_out)
    f = w1.shape[1]
    cols = slice(rank * f, (rank + 1) * f)
    return out.detach(), xx.grad, ww1.grad[:, cols], bb1.grad[cols], ww2.grad[cols], bb2.grad
