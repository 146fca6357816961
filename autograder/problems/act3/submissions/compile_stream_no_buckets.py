# expect: FAIL
# problem: act3.compile_stream
# devices: cpu cuda
# entry: attention_block
# No bucketing: every distinct length is a new shape, so the stream compiles dozens of graphs.
import math

import torch.nn.functional as F

CLIP = 8.0


def attention_block(x, mask, weight):
    h = F.layer_norm(x, x.shape[-1:]).clamp(-CLIP, CLIP)
    scores = (h @ weight) @ h.T / math.sqrt(x.shape[-1])
    return x + scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ h


def bucket_length(length):
    return length
