# expect: FAIL
# problem: act5.ring_all_reduce
# devices: cpu cuda
# Right answers from send and recv, but every rank sends its whole vector to every other: (W-1) n
# elements per rank instead of a ring's 2(W-1)/W n.
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = tensor.clone()
    mine = tensor.contiguous()
    requests = [dist.isend(mine, peer) for peer in range(world) if peer != rank]
    buf = torch.empty_like(tensor)
    for peer in range(world):
        if peer != rank:
            dist.recv(buf, peer)
            out += buf
    for request in requests:
        request.wait()
    return out
