"""Tuning record for Act 7's int4 GEMV: the solution's kernel over a grid of block shapes, and a
two-dimensional variant that keeps a [BLOCK_N, BLOCK_KB] accumulator and reduces once at the end,
both at the benchmark sizes (batch 1), against a bf16 cuBLAS GEMV on weights that are not in L2.
Times are triton.testing.do_bench medians (L2 flushed between calls).
Run on a GPU: python tests/gpu/tune_act7_int4.py   (a few minutes, most of it compiling)."""
# The lambdas handed to do_bench are called at once, inside the loop that binds their variables.
# ruff: noqa: B023

from __future__ import annotations

import functools
import itertools
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gpu.probe_small_calls import solution_module  # noqa: E402


@triton.jit
def int4_gemv_2d_kernel(x_ptr, w_ptr, scale_ptr, zero_ptr, out_ptr, N, K, stride_wn, stride_sn, stride_zn,
                        BLOCK_N: tl.constexpr, BLOCK_KB: tl.constexpr):
    """Batch 1: BLOCK_N rows per program, BLOCK_KB packed bytes of each per step; the products are
    summed into a [BLOCK_N, BLOCK_KB] accumulator and reduced once after the loop."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_rows = rows < N
    kb = tl.arange(0, BLOCK_KB)
    acc = tl.zeros((BLOCK_N, BLOCK_KB), dtype=tl.float32)
    for start in range(0, K // 2, BLOCK_KB):
        cols = start + kb
        packed = tl.load(w_ptr + rows[:, None] * stride_wn + cols[None, :], mask=in_rows[:, None], other=0)
        group = cols // 64
        s = tl.load(scale_ptr + rows[:, None] * stride_sn + group[None, :], mask=in_rows[:, None], other=0.0).to(tl.float32)
        z = tl.load(zero_ptr + rows[:, None] * stride_zn + group[None, :], mask=in_rows[:, None], other=0).to(tl.float32)
        x_even = tl.load(x_ptr + 2 * cols).to(tl.float32)
        x_odd = tl.load(x_ptr + 2 * cols + 1).to(tl.float32)
        low = (packed & 0xF).to(tl.float32) - z
        high = (packed >> 4).to(tl.float32) - z
        acc += s * (low * x_even[None, :] + high * x_odd[None, :])
    tl.store(out_ptr + rows, tl.sum(acc, axis=1).to(tl.bfloat16), mask=in_rows)


def main() -> None:
    problem, module = solution_module("act7.int4_gemv")
    solution_kernel = module.int4_gemv_kernel.fn
    results = []
    for size in problem.bench_sizes:
        inputs = problem.make_inputs(size, 1, "cuda")
        x, w, scale, zero = inputs["x"], inputs["w_packed"], inputs["scale"], inputs["zero"]
        _, n, k = size
        expected = problem.reference(**inputs).float()
        dense = (0.01 * torch.randn(n, k, device="cuda")).to(torch.bfloat16)
        cublas_us = 1e3 * triton.testing.do_bench(lambda: torch.matmul(x, dense.t()), return_mode="median")
        tuned_us = 1e3 * triton.testing.do_bench(lambda: module.int4_gemv(**inputs), return_mode="median")
        nbytes = problem.bytes_moved(size)
        print(json.dumps({"size": size, "cublas_bf16_us": round(cublas_us, 2), "solution_autotuned_us": round(tuned_us, 2), "solution_GBps": round(nbytes / tuned_us / 1e3)}), flush=True)
        # One output per size: the configurations of a size are run and checked one after another.
        out = torch.empty((1, n), dtype=torch.bfloat16, device="cuda")
        args = (x, w, scale, zero, out)
        # Up to a whole row per step (64 groups at K = 8192): every byte a program needs is requested
        # at once, the most loads in flight the kernel can have without splitting K.
        groups = k // 128
        for block_n, steps, warps, stages in itertools.product((2, 4, 8, 16), (4, 8, 16, 32, 64), (4, 8), (3,)):
            if steps > groups:
                continue
            config = dict(BLOCK_N=block_n, GROUPS_PER_STEP=steps, num_warps=warps, num_stages=stages)
            run = functools.partial(solution_kernel[(1, triton.cdiv(n, block_n))], *args, 1, n, k, x.stride(0), w.stride(0), scale.stride(0), zero.stride(0), out.stride(0), GROUP=128, **config)
            results.append(("solution", size, config, run, out, expected, nbytes, cublas_us))
        for block_n, block_kb, warps, stages in itertools.product((4, 8, 16), (512, 1024, 2048), (4, 8), (2,)):
            config = dict(BLOCK_N=block_n, BLOCK_KB=block_kb, num_warps=warps, num_stages=stages)
            run = functools.partial(int4_gemv_2d_kernel[(triton.cdiv(n, block_n),)], *args, n, k, w.stride(0), scale.stride(0), zero.stride(0), **config)
            results.append(("2d", size, config, run, out, expected, nbytes, cublas_us))
    best: dict = {}
    for variant, size, config, run, out, expected, nbytes, cublas_us in results:
        try:
            run()
            torch.cuda.synchronize()
            error = (out.float() - expected).abs().max().item()
            us = 1e3 * triton.testing.do_bench(run, warmup=10, rep=40, return_mode="median")
        except Exception as exc:  # noqa: BLE001 -- a configuration that does not compile is skipped
            print(json.dumps({"variant": variant, "size": size, **config, "error": str(exc)[:120]}), flush=True)
            continue
        row = {"variant": variant, "size": size, **config, "us": round(us, 2), "GBps": round(nbytes / us / 1e3), "x_cublas": round(cublas_us / us, 2), "max_error": round(error, 4)}
        best.setdefault((variant, str(size)), []).append(row)
    for rows in best.values():
        for row in sorted(rows, key=lambda r: r["us"])[:4]:
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
