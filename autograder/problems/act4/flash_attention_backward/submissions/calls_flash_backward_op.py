# expect: REJECT
# devices: cpu cuda
# The library's own backward operator, called directly on the saved O and L (no autograd, no
# forward), its three gradients written into one preallocated output by copies: the copies are
# bookkeeping, the operator's arithmetic (its kernels on a GPU) is not the learner's.
import torch


def flash_attention_backward(q, k, v, o, lse, do, causal):
    s = q.shape[2]
    if q.is_cuda:
        empty = torch.empty((), dtype=torch.long)
        grads = torch.ops.aten._scaled_dot_product_flash_attention_backward(do, q, k, v, o, lse, None, None, s, s, 0.0, causal, empty, empty)
    else:
        grads = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(do, q, k, v, o, lse, 0.0, causal)
    out = torch.empty((3, *q.shape), dtype=q.dtype, device=q.device)
    for index, grad in enumerate(grads[:3]):
        out[index].copy_(grad)
    return out
