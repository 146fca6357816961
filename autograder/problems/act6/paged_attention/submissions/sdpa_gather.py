# expect: REJECT
# devices: cpu cuda
# Gathers the cache into a contiguous copy and calls SDPA: right answers, no kernel of the learner's.
import torch


def paged_attention(q, k_cache, v_cache, block_tables, seq_lens):
    batch, heads, head_dim = q.shape
    longest = block_tables.shape[1] * k_cache.shape[1]
    tables = block_tables.long().clamp(min=0)
    k = k_cache[tables].reshape(batch, longest, k_cache.shape[2], head_dim).transpose(1, 2)
    v = v_cache[tables].reshape(batch, longest, v_cache.shape[2], head_dim).transpose(1, 2)
    mask = (torch.arange(longest, device=q.device)[None, :] < seq_lens[:, None].long())[:, None, None, :]
    out = torch.nn.functional.scaled_dot_product_attention(q[:, :, None, :], k, v, attn_mask=mask, enable_gqa=True)
    return out[:, :, 0, :].contiguous()
