# expect: FAIL
# problem: act5.ring_all_reduce
# devices: cpu cuda
# says: operation not permitted
# A process group of the ranks' own: a store on a port of the loopback network and gloo's all-reduce
# on it, beside one ring step of dummy sends through the grader's group. The ranks whose messages the
# judge carries have no network (autograder.relay): the store cannot bind.
import datetime

import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    store = dist.TCPStore("127.0.0.1", 29611, world, rank == 0, timeout=datetime.timedelta(seconds=20))
    group = dist.ProcessGroupGloo(store, rank, world, datetime.timedelta(seconds=20))
    out = tensor.clone()
    group.allreduce([out]).wait()
    landing = torch.empty_like(tensor)
    for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor.contiguous(), (rank + 1) % world), dist.P2POp(dist.irecv, landing, (rank - 1) % world)]):
        request.wait()
    return out
