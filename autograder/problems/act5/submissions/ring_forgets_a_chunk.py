# expect: FAIL
# problem: act5.ring_all_reduce
# devices: cpu cuda
# The all-gather stops one step short: each rank keeps one chunk that was never updated.
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = tensor.clone()
    size = -(-out.numel() // world)
    chunks = [out[i * size:(i + 1) * size] for i in range(world)]
    right, left = (rank + 1) % world, (rank - 1) % world

    def step(send_i, recv_i, add):
        buf = torch.empty_like(chunks[recv_i])
        request = dist.isend(chunks[send_i].contiguous(), right)
        dist.recv(buf, left)
        request.wait()
        chunks[recv_i].add_(buf) if add else chunks[recv_i].copy_(buf)

    for s in range(world - 1):
        step((rank - s) % world, (rank - s - 1) % world, True)
    for s in range(world - 2):
        step((rank - s + 1) % world, (rank - s) % world, False)
    return out
