# expect: FAIL
# problem: act3.compile_stream
# devices: cpu cuda
# entry: attention_block
# The block as first written, handed in unchanged: .item() feeding a branch, int() of a tensor and a
# print are graph breaks, which torch.compile(fullgraph=True) refuses.
import math

import torch.nn.functional as F

CLIP = 8.0


def attention_block(x, mask, weight):
    h = F.layer_norm(x, x.shape[-1:])
    if h.abs().max().item() > CLIP:
        h = h.clamp(-CLIP, CLIP)
    print(f"{int(mask.sum())} tokens")
    scores = (h @ weight) @ h.T / math.sqrt(x.shape[-1])
    scores = scores.masked_fill(~mask, float("-inf"))
    return x + scores.softmax(dim=-1) @ h


def bucket_length(length):
    return next(b for b in (40, 72, 100, 128, 160, 200, 256, 320, 400, 512) if b >= length)
