# expect: FAIL
# problem: act3.compile_stream
# devices: cpu cuda
# entry: attention_block
# No graph break and good buckets, but the padded keys are attended to: the real rows change.
import math

import torch.nn.functional as F

CLIP = 8.0


def attention_block(x, mask, weight):
    h = F.layer_norm(x, x.shape[-1:]).clamp(-CLIP, CLIP)
    scores = (h @ weight) @ h.T / math.sqrt(x.shape[-1])
    return x + scores.softmax(dim=-1) @ h


def bucket_length(length):
    return next(b for b in (40, 72, 100, 128, 160, 200, 256, 320, 400, 512) if b >= length)
