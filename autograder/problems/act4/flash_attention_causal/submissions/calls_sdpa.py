# expect: REJECT
# devices: cpu cuda
# entry: flash_attention
# PyTorch's SDPA does the work: the profiler sees its kernels (on a CPU, its operators).
import torch.nn.functional as F


def flash_attention(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
