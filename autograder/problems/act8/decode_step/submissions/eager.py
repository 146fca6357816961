# expect: REJECT
# devices: cpu cuda
# The eager op-by-op step handed in as the megakernel: right answers, every kernel PyTorch's.
import math

import torch
import torch.nn.functional as F


def _norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean() + 1e-5) * w


def _rope(x, cos, sin):
    first, second = x.chunk(2, dim=-1)
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


def decode_step(token, embed, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, final_norm, lm_head, k_cache, v_cache, cos, sin):
    n_layers, n_kv, cached, hd = k_cache.shape
    group = wq.shape[1] // hd // n_kv
    x = embed.index_select(0, token)[0]
    for i in range(n_layers):
        h = _norm(x, attn_norm[i])
        q = _rope(F.linear(h, wq[i]).view(n_kv, group, hd), cos, sin)
        k = _rope(F.linear(h, wk[i]).view(n_kv, 1, hd), cos, sin)
        v = F.linear(h, wv[i]).view(n_kv, 1, hd)
        scores = torch.cat([q @ k_cache[i].transpose(1, 2), q @ k.transpose(1, 2)], dim=-1) / math.sqrt(hd)
        p = torch.softmax(scores, dim=-1)
        x = x + F.linear((p[..., :cached] @ v_cache[i] + p[..., cached:] * v).reshape(-1), wo[i])
        m = _norm(x, mlp_norm[i])
        x = x + F.linear(F.silu(F.linear(m, w_gate[i])) * F.linear(m, w_up[i]), w_down[i])
    return F.linear(_norm(x, final_norm), lm_head)
