# expect: REJECT
# problem: act5.ring_all_reduce
# devices: cpu cuda
# The library's all-reduce does the work: right answers, but not the learner's ring.
import torch.distributed as dist


def ring_all_reduce(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
