"""The operations Act 2's measured exercises time, built lazily on the device: on a GPU big enough
to take 0.1 ms or more (far above timer resolution), on a CPU (the grader's own tests) smaller."""

from __future__ import annotations

import random

from ...measured import MeasuredOp
from .models import elementwise_cost, matmul_cost, softmax_cost


def tensor_ops(device: str):
    """The operations the learner times, built lazily on the device. On a GPU they are big enough to
    take 0.1 ms or more (far above timer resolution); on a CPU (the grader's own tests) smaller."""
    import torch

    from ..baselines import ieee_fp32_matmul

    generator = torch.Generator(device=device).manual_seed(random.SystemRandom().getrandbits(62))

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(dtype)

    def fp32_matmul(a, b):
        # The fp32 ceiling is measured with TF32 off; the operation must run the same way, whichever
        # of torch's two TF32 switches the learner's code used.
        with ieee_fp32_matmul():
            return a @ b

    return torch, randn, fp32_matmul


def point_ops(device: str) -> list:
    torch, randn, fp32_matmul = tensor_ops(device)
    gpu = device == "cuda"
    n = 1 << 26 if gpu else 1 << 22
    rows, cols = (8192, 8192) if gpu else (1024, 2048)
    size = 4096 if gpu else 384
    x, y = randn(n), randn(n)
    s = randn(rows, cols)
    a, b = randn(size, size), randn(size, size)
    ops = [
        MeasuredOp(f"add of two {n:,}-element float32 vectors", lambda: torch.add(x, y), **cost(elementwise_cost(n, 4, 2, 1))),
        MeasuredOp(f"softmax of a {rows}x{cols} float32 matrix", lambda: torch.softmax(s, dim=-1), **cost(softmax_cost(rows, cols, 4))),
        MeasuredOp(f"float32 matmul {size}x{size}x{size} (TF32 off)", lambda: fp32_matmul(a, b), **cost(matmul_cost(size, size, size, 4))),
    ]
    if gpu:
        ah, bh = a.to(torch.bfloat16), b.to(torch.bfloat16)
        ops.append(MeasuredOp(f"bfloat16 matmul {size}x{size}x{size}", lambda: ah @ bh, dtype="bfloat16", **cost(matmul_cost(size, size, size, 2))))
    return ops


def regime_ops(device: str) -> list:
    """Each operation and its doubled twin get their own contiguous inputs, so the doubled one does
    exactly twice the work and nothing else (no strided views, no copies)."""
    torch, randn, fp32_matmul = tensor_ops(device)
    gpu = device == "cuda"
    tiny = 4096 if gpu else 16
    n = 1 << 25 if gpu else 1 << 22
    rows, cols = (4096, 8192) if gpu else (512, 2048)
    size = 2048 if gpu else 256

    def add(count):
        x, y = randn(count), randn(count)
        return lambda: torch.add(x, y)

    def softmax(count):
        s = randn(count, cols)
        return lambda: torch.softmax(s, dim=-1)

    def matmul(m, k, dtype, multiply):
        a, b = randn(m, k, dtype=dtype), randn(k, m, dtype=dtype)
        return lambda: multiply(a, b)

    ops = [
        MeasuredOp(f"add of two {tiny:,}-element vectors (doubled: {2 * tiny:,})", add(tiny), doubled=add(2 * tiny), **cost(elementwise_cost(tiny, 4, 2, 1))),
        MeasuredOp(f"add of two {n:,}-element vectors (doubled: {2 * n:,})", add(n), doubled=add(2 * n), **cost(elementwise_cost(n, 4, 2, 1))),
        MeasuredOp(f"softmax of {rows}x{cols} (doubled: {2 * rows}x{cols})", softmax(rows), doubled=softmax(2 * rows), **cost(softmax_cost(rows, cols, 4))),
        MeasuredOp(
            f"float32 matmul {size}x{size}x{size} (doubled: K = {2 * size})",
            matmul(size, size, torch.float32, fp32_matmul),
            doubled=matmul(size, 2 * size, torch.float32, fp32_matmul),
            **cost(matmul_cost(size, size, size, 4)),
        ),
    ]
    if gpu:
        big = 4096
        ops.append(
            MeasuredOp(
                f"bfloat16 matmul {big}x{big}x{big} (doubled: K = {2 * big})",
                matmul(big, big, torch.bfloat16, torch.matmul),
                doubled=matmul(big, 2 * big, torch.bfloat16, torch.matmul),
                dtype="bfloat16",
                **cost(matmul_cost(big, big, big, 2)),
            )
        )
    return ops


def cost(cost: dict) -> dict:
    return {"flops": float(cost["flops"]), "bytes_moved": float(cost["bytes"])}
