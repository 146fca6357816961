"""Act 3, exercise 3.4: a CUDA graph for a launch-bound loop.

The step is a decode-like loop at batch 1: 24 layers of a matrix-vector product, GELU, residual add
and LayerNorm on one token of width 256, about a hundred kernels of a few microseconds each. The
learner wraps it in a CUDA graph (autograder.graphs grades the wrapper and times it against the
eager step in the same grading).
"""

from __future__ import annotations

from ...graphs import GraphProblem
from ...problem import register

WIDTH = 256
LAYERS = 24


def make_step(seed: int, device: str):
    """The grader's step and its input width. The weights come from the seed on the CPU, so the
    worker and the judge build the same step; ``dtype`` runs it in another precision (the reference)."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(seed)
    weights = [(torch.randn(WIDTH, WIDTH, generator=generator) / WIDTH**0.5).to(device) for _ in range(LAYERS)]
    cast: dict = {}

    def step(x, dtype=None):
        layers = weights if dtype is None else cast.setdefault(dtype, [w.to(dtype) for w in weights])
        h = x
        for w in layers:
            h = F.layer_norm(h + F.gelu(h @ w), (WIDTH,))
        return h

    return step, WIDTH


register(
    GraphProblem(
        name="act3.cuda_graph",
        title="A CUDA graph for a launch-bound loop",
        notebook="act3-profiling/cuda_graph",
        function="make_graphed",
        make_step=make_step,
    )
)
