# expect: REJECT
# problem: act5.ring_all_reduce
# devices: cpu cuda
# says: torch.distributed's own collective
# The library's all-reduce with every dispatch mode switched off, so a record kept in the rank's own
# process never sees it, and one ring step of dummy sends for the traffic rule. The ranks' group is
# the grader's relay (autograder.relay): its messages cross the judge, which counts them, and a
# collective has nothing to run on.
import torch
import torch.distributed as dist
from torch.utils._python_dispatch import _disable_current_modes


def ring_all_reduce(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = tensor.clone()
    with _disable_current_modes():
        dist.all_reduce(out)
    landing = torch.empty_like(tensor)
    for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor.contiguous(), (rank + 1) % world), dist.P2POp(dist.irecv, landing, (rank - 1) % world)]):
        request.wait()
    return out
