# expect: REJECT
# problem: act5.ring_all_reduce
# devices: cpu cuda
# The library's collective through another door: the functional collectives (no dist.all_reduce in sight).
import torch.distributed as dist
import torch.distributed._functional_collectives as fc


def ring_all_reduce(tensor):
    return fc.wait_tensor(fc.all_reduce(tensor, "sum", dist.group.WORLD))
