# expect: REJECT
# problem: act5.ring_all_reduce
# devices: cpu cuda
# Takes the grader's record of communication off the dispatch stack, then calls the library's all-reduce.
import torch.distributed as dist
from torch.utils._python_dispatch import _pop_mode


def ring_all_reduce(tensor):
    mode = _pop_mode()
    out = tensor.clone()
    dist.all_reduce(out)
    from torch.utils._python_dispatch import _push_mode

    _push_mode(mode)
    return out
