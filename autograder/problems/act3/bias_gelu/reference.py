"""out = GELU(x + bias), the exact (erf) GELU of a float32 activation plus a bias broadcast over rows.

Eager PyTorch runs it as two kernels, the add writing a temporary that the GELU reads back: four
passes over the activation's bytes where one fused kernel needs two.
"""

from __future__ import annotations

import functools
import math

import torch


def make_inputs(size: tuple, seed: int, device: str) -> dict:
    rows, cols = size
    generator = torch.Generator(device=device).manual_seed(seed)
    # Activations of a few units around zero, where GELU bends: a kernel that computes ReLU or
    # forgets the bias is wrong on most elements.
    x = 2.0 * torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32)
    bias = torch.randn(cols, generator=generator, device=device, dtype=torch.float32)
    return {"x": x, "bias": bias}


def reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    z = x.double() + bias.double()[None, :]
    return 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))


def library(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # Eager, as a model's forward pass writes it: two kernels and a temporary.
    return torch.nn.functional.gelu(x + bias)


def library_compiled(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The same two operations through torch.compile: Inductor fuses them into one Triton kernel of
    its own. Timed beside the eager baseline and reported, not graded."""
    return _compiled_library()(x, bias)


@functools.cache
def _compiled_library():
    import torch._inductor.config as inductor_config

    # The trusted helper compiles in its own process, not in a pool of workers.
    inductor_config.compile_threads = 1
    return torch.compile(library, dynamic=False)


extra_libraries = (("torch.compile(gelu(x + bias))", library_compiled),)


def bytes_moved(size: tuple) -> float:
    rows, cols = size
    return 4.0 * (2 * rows * cols + cols)  # reads x, writes out, reads the bias once


def flops(size: tuple) -> float:
    rows, cols = size
    # The add, the scale by 1/sqrt(2), erf (counted as one), 1 + erf, and the two products.
    return 6.0 * rows * cols
