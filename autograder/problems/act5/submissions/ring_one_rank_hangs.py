# expect: TIMEOUT
# problem: act5.ring_all_reduce
# devices: cpu cuda
# timeout: 45
# Rank 1 waits for a message nobody sends; the others return (wrong) answers at once.
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    if dist.get_rank() == 1:
        buf = torch.empty_like(tensor)
        dist.recv(buf, 0)
    return tensor.clone()
