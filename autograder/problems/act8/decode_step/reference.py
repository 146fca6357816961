"""The whole decode step of the tiny transformer at batch 1: the token's embedding, every layer, the
final RMSNorm and the logits. The library is the eager op-by-op step (a few dozen kernels a layer); its
CUDA-graph version is timed beside it. The inputs and both baselines are in
autograder/problems/act8/decode.py."""

from __future__ import annotations

from ....megakernels import decode_step_eager as library  # noqa: F401
from ....megakernels import decode_step_graphed
from ....megakernels import decode_step_reference as reference  # noqa: F401
from ....megakernels import describe_step as describe_size  # noqa: F401
from ....megakernels import step_bytes as bytes_moved  # noqa: F401
from ....megakernels import step_flops as flops  # noqa: F401
from ....megakernels import step_inputs as make_inputs  # noqa: F401

# The same eager step replayed from a CUDA graph: no launch cost, the bubbles between kernels remain.
extra_libraries = (("eager step as a CUDA graph", decode_step_graphed),)
