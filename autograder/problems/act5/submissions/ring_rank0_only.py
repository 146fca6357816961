# expect: FAIL
# problem: act5.ring_all_reduce
# devices: cpu cuda
# Every rank sends its vector to rank 0, which sums them: right on rank 0, wrong everywhere else.
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank != 0:
        dist.send(tensor.contiguous(), 0)
        return tensor.clone()
    out = tensor.clone()
    buf = torch.empty_like(tensor)
    for source in range(1, world):
        dist.recv(buf, source)
        out += buf
    return out
