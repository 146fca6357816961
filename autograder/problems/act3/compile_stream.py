"""Act 3, exercise 3.3: compile without recompiling.

A small attention block meets a stream of sequences whose lengths vary from 1 to 512. Compiled as
given it breaks its graph (.item() feeding a branch, a print); compiled shape by shape it would
recompile for nearly every request. The learner removes the breaks and writes a bucketing policy;
the hidden stream must then cost at most MAX_COMPILES compiles and at most MAX_PADDING_WASTE extra
tokens (autograder.compiled).
"""

from __future__ import annotations

import math
import random

import numpy as np

from ...compiled import CompiledProblem
from ...problem import register

WIDTH = 32
MAX_LENGTH = 512
STREAM = 48
MAX_COMPILES = 10
MAX_PADDING_WASTE = 0.2
CLIP = 8.0
LAYER_NORM_EPS = 1e-5


def attention_block(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """One sequence (length, width), unpadded: layer norm, clip, one head of self-attention with a
    bilinear score, residual. In the dtype of its inputs (float64 for the reference)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    h = np.clip((x - mean) / np.sqrt(var + LAYER_NORM_EPS), -CLIP, CLIP)
    scores = (h @ weight) @ h.T / math.sqrt(x.shape[-1])
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return x + (p / p.sum(axis=-1, keepdims=True)) @ h


def make_stream(seed: int) -> dict:
    """Lengths as a server sees them: mostly short, some long, repeats, the extremes 1 and 512."""
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    lengths = [1, MAX_LENGTH] + [min(MAX_LENGTH, max(1, int(r.lognormvariate(math.log(160), 0.7)))) for _ in range(STREAM - 2)]
    r.shuffle(lengths)
    xs = [(2.0 * rng.standard_normal((length, WIDTH))).astype(np.float32) for length in lengths]
    weight = (rng.standard_normal((WIDTH, WIDTH)) / math.sqrt(WIDTH)).astype(np.float32)
    return {"xs": xs, "weight": weight}


register(
    CompiledProblem(
        name="act3.compile_stream",
        title="Compile without recompiling",
        notebook="act3-profiling/compile_stream",
        function="attention_block",
        bucket_function="bucket_length",
        make_stream=make_stream,
        reference=attention_block,
        max_compiles=MAX_COMPILES,
        max_padding_waste=MAX_PADDING_WASTE,
    )
)
