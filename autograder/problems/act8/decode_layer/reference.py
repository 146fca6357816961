"""One layer of the tiny transformer for one new token (batch 1): RMSNorm, the Q/K/V projections,
RoPE, attention over the cached keys and values plus the token itself, the output projection and its
residual, RMSNorm, the SwiGLU MLP and its residual. Eager PyTorch runs it as a few dozen kernels, each a
few microseconds of mostly idle GPU at these sizes; the inputs and the eager layer are in
autograder/problems/act8/decode.py."""

from __future__ import annotations

from ....megakernels import decode_layer_eager as library  # noqa: F401
from ....megakernels import decode_layer_reference as reference  # noqa: F401
from ....megakernels import describe_layer as describe_size  # noqa: F401
from ....megakernels import layer_bytes as bytes_moved  # noqa: F401
from ....megakernels import layer_flops as flops  # noqa: F401
from ....megakernels import layer_inputs as make_inputs  # noqa: F401
