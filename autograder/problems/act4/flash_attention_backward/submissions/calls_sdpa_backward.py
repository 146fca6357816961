# expect: REJECT
# devices: cpu cuda
# PyTorch's SDPA does the work, forward again and backward by autograd: the profiler sees its
# kernels (on a CPU, its operators).
import torch
import torch.nn.functional as F


def flash_attention_backward(q, k, v, o, lse, do, causal):
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    with torch.enable_grad():
        out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
    return torch.stack(torch.autograd.grad(out, leaves, do))
