# expect: FAIL
# problem: act5.ring_all_reduce
# devices: cpu cuda
# says: could not read
# A chain of partial sums to rank 0, which writes the total into its folder for the other ranks to
# read: every rank sends n elements and receives n, inside the ring's traffic rule. Each rank reads
# only its own folder, where its own copy of the submission lies (autograder.distributed_ranks).
import os
import time

import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    # Rank r sends its running sum to r+1 (one message of n), the last rank's reaches rank 0, which
    # writes the total where the others read it: every rank sends n and receives n.
    rank, world = dist.get_rank(), dist.get_world_size()
    shared = os.path.join(os.path.dirname(os.getcwd()), "learner", f"total-{tensor.numel()}-{world}.pt")
    right, left = (rank + 1) % world, (rank - 1) % world
    if rank == 0:
        dist.send(tensor.contiguous(), right)
        partial = torch.empty_like(tensor)
        dist.recv(partial, left)
        total = partial + tensor
        torch.save(total, shared + ".tmp")
        os.replace(shared + ".tmp", shared)
        return total
    partial = torch.empty_like(tensor)
    dist.recv(partial, left)
    dist.send((partial + tensor).contiguous(), right)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            return torch.load(shared)
        except (OSError, RuntimeError, EOFError):
            time.sleep(0.02)
    raise RuntimeError(f"rank {rank} could not read {shared}")
