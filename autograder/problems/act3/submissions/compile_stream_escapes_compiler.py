# expect: FAIL
# problem: act3.compile_stream
# devices: cpu cuda
# entry: attention_block
# Replaces torch.compile with a function that compiles nothing, to keep a graph break and skip
# bucketing unseen: the grader's harness holds its own torch.compile, so the block is compiled with
# fullgraph=True all the same and its graph break refused.
import math

import torch
import torch.nn.functional as F

CLIP = 8.0
torch.compile = lambda fn, **options: fn


def attention_block(x, mask, weight):
    h = F.layer_norm(x, x.shape[-1:])
    if h.abs().max().item() > CLIP:
        h = h.clamp(-CLIP, CLIP)
    scores = (h @ weight) @ h.T / math.sqrt(x.shape[-1])
    return x + scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ h


def bucket_length(length):
    return length
