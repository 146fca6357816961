"""out = GELU_tanh(x @ w + bias) for bfloat16 x (M x K), w (K x N) and bias (N), accumulated in float32:
a linear layer and its activation in one kernel, graded against cuBLASLt's fused bias + GELU epilogue.

Unfused, the product is stored as an M x N pre-activation and read back by the bias add and again by
the GELU (eager PyTorch: three kernels, three more passes over M x N). Fused, the bias and the GELU
are applied to the float32 accumulator in registers and the output is stored once: the traffic is
the matmul's plus one read of the bias. The sizes, the float64 product and the matmul's traffic and
FLOPs are the plain matmul's (autograder/problems/act4/matmul.py).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..matmul import describe_size, matmul_bytes, matmul_flops, matmul_reference

__all__ = ["make_inputs", "reference", "library", "extra_libraries", "bytes_moved", "flops", "describe_size"]

# The tanh approximation of GELU per output element: the bias add, z^3 (two products), the fma with
# 0.044715, the scale by sqrt(2/pi), tanh (counted as one), 1 + tanh, and the two products by z / 2.
EPILOGUE_FLOPS = 9


def make_inputs(size: tuple[int, int, int], seed: int, device: str) -> dict:
    """x and the bias of unit variance, w of variance 1/K (a linear layer's initialisation): the
    pre-activation has a variance near 2 at every K, where GELU bends. With unscaled w it grows as
    sqrt(K), the GELU is a ReLU on almost every element and the bias drowns in the tolerance."""
    m, n, k = size
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(m, k, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)
    w = torch.randn(k, n, generator=generator, device=device, dtype=torch.float32).div_(math.sqrt(k)).to(torch.bfloat16)
    bias = torch.randn(n, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)
    return {"x": x, "w": w, "bias": bias}


def reference(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return F.gelu(matmul_reference(x, w) + bias.double(), approximate="tanh")


def library(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """One call, the epilogue fused. On a GPU, ATen sends a 1-D bias, beta = 1 and contiguous
    operands larger than one row or column to cuBLASLt with the GELU_BIAS epilogue: bias and GELU
    applied to the float32 accumulator before the one store. Its GELU is the tanh approximation:
    where cuBLASLt is not used (M, N or K of 1, DISABLE_ADDMM_CUDA_LT=1) ATen runs a plain GEMM and
    then ``gelu_(out, "tanh")`` to give the same numbers (aten/src/ATen/native/cuda/Blas.cpp). On a
    CPU the same call is addmm followed by the exact (erf) GELU: at most 5e-4 from the tanh
    approximation, a thirtieth of a bfloat16 step at 2, so the tolerance derived from it is the same."""
    return torch._addmm_activation(bias, x, w, use_gelu=True)


def eager(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """As a model's forward pass is often written: the product, the add and the GELU, three kernels
    with two M x N temporaries between them. Timed beside the library and reported, not graded."""
    return F.gelu(x @ w + bias, approximate="tanh")


extra_libraries = (("eager gelu(x @ w + bias)", eager),)


def bytes_moved(size: tuple[int, int, int]) -> float:
    # The matmul's (reads x and w, writes out, in bf16) and one read of the bias.
    return matmul_bytes(size) + 2.0 * size[1]


def flops(size: tuple[int, int, int]) -> float:
    m, n, _ = size
    return matmul_flops(size) + EPILOGUE_FLOPS * m * n
