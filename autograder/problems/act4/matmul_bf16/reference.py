"""C = A @ B for bfloat16 A and B: inputs drawn in float32 and rounded to bfloat16, the float64
reference, cuBLAS through torch.matmul, and the traffic of one call; all but the dtype is shared with
act4.matmul_fp16 (autograder/problems/act4/matmul.py)."""

from __future__ import annotations

import torch

from ..matmul import describe_size, matmul_inputs
from ..matmul import matmul_bytes as bytes_moved
from ..matmul import matmul_flops as flops
from ..matmul import matmul_library as library
from ..matmul import matmul_reference as reference

__all__ = ["make_inputs", "reference", "library", "bytes_moved", "flops", "describe_size"]

make_inputs = matmul_inputs(torch.bfloat16)
