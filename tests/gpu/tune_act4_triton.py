"""Tuning record for Act 4's Triton reference kernels (softmax, matmul, FlashAttention forward).

Runs the kernels of the solution notebooks (solutions/act4-kernels/*.ipynb), each configuration
launched explicitly, then the autotuned solution functions as the grader calls them, against the
libraries timed in the same run: torch.softmax and a device copy, cuBLAS (torch.matmul), and SDPA's
flash and cuDNN backends. Times are triton.testing.do_bench medians (L2 flushed between calls).
Run on a GPU: python tests/gpu/tune_act4_triton.py   (about 1-2 minutes, most of it compiling).
"""
# The lambdas handed to do_bench are called at once, inside the loop that binds their variables.
# ruff: noqa: B023

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
STARTED = time.perf_counter()


def load_solution(name: str) -> dict:
    """Execute the solution cell of a notebook (nbgrader markers removed) and return its namespace."""
    nb = json.loads((ROOT / "solutions" / "act4-kernels" / f"{name}.ipynb").read_text())
    [cell] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    code = re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", "".join(cell["source"]) + "\n", flags=re.MULTILINE)
    # Triton reads a kernel's source through inspect when it is decorated: give it a real file.
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"act4_{name}_solution.py"
        path.write_text(code)
        namespace: dict = {"__name__": f"act4_{name}_solution", "__file__": str(path)}
        exec(compile(code, str(path), "exec"), namespace)
    return namespace


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")


def line(*parts) -> None:
    print(" | ".join(str(p) for p in parts), flush=True)


def section(title: str) -> None:
    print(f"\n=== {title}  (t = {time.perf_counter() - STARTED:.0f} s)", flush=True)


def copy_bandwidth() -> float:
    src = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    return 2 * src.numel() * 4 / (ms * 1e-3)


def tune_softmax(copy_bw: float) -> None:
    from autograder import registry

    p = registry.get("act4.softmax")

    ns = load_solution("softmax")
    kernel, softmax = ns["softmax_kernel"], ns["softmax"]
    section("softmax: GB/s and fraction of copy bandwidth (target 90%)")
    for m, n in ((8192, 8192), (16384, 4096)):
        x = torch.randn(m, n, device="cuda") * 4
        out = torch.empty_like(x)
        nbytes = 2 * m * n * 4
        lib_ms = bench(lambda: torch.softmax(x, dim=-1))
        block = triton.next_power_of_2(n)
        for warps in (4, 8, 16, 32):
            ms = bench(lambda: kernel[(m,)](x, out, m, n, x.stride(0), out.stride(0), BLOCK_SIZE=block, num_warps=warps))
            line(f"softmax {m}x{n}", f"num_warps={warps}", f"{ms:.3f} ms", f"{nbytes / ms / 1e6:,.0f} GB/s", f"{nbytes / (ms * 1e-3) / copy_bw:.1%} of copy")
        ms = bench(lambda: softmax(x))
        line(
            f"softmax {m}x{n}", "SOLUTION", f"{ms:.3f} ms", f"{nbytes / ms / 1e6:,.0f} GB/s", f"{nbytes / (ms * 1e-3) / copy_bw:.1%} of copy",
            f"torch.softmax {lib_ms:.3f} ms ({nbytes / (lib_ms * 1e-3) / copy_bw:.1%})", f"ratio {lib_ms / ms:.2f}x",
        )
    for size in ((3, 127), (129, 781), (33, 4097), (7, 16384)):
        inputs = p.make_inputs(size, 1, "cuda")
        error = (softmax(**inputs).double() - p.reference(**inputs)).abs().max().item()
        lib = (p.library(**inputs).double() - p.reference(**inputs)).abs().max().item()
        line(f"softmax {size}", f"max error vs float64 {error:.2e}", f"torch.softmax {lib:.2e}")


MATMUL_SWEEP = (
    # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
    (128, 256, 64, 8, 8, 3),
    (256, 128, 64, 8, 8, 3),
    (128, 128, 64, 8, 8, 4),
    (128, 128, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 256, 64, 8, 8, 4),
)


def tune_matmul() -> None:
    from autograder import registry

    ns = load_solution("matmul")
    inner = ns["matmul_kernel"].fn  # below the autotuner: the heuristics that set EVEN_K
    matmul = ns["matmul"]
    section("matmul: TFLOP/s and ratio to cuBLAS (target 0.95x in bf16 at 4096 and 8192)")
    for dtype in (torch.bfloat16, torch.float16):
        for n in (4096, 8192):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            flops = 2 * n**3
            lib_ms = bench(lambda: torch.matmul(a, b))
            for bm, bn, bk, gm, warps, stages in MATMUL_SWEEP:
                grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
                try:
                    ms = bench(lambda: inner[grid](
                        a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=gm, num_warps=warps, num_stages=stages,
                    ))
                except Exception as exc:  # noqa: BLE001 -- out of shared memory: report and go on
                    line(f"matmul {dtype} {n}", f"{bm}x{bn}x{bk} g{gm} w{warps} s{stages}", f"failed: {type(exc).__name__}")
                    continue
                line(f"matmul {str(dtype)[6:]} {n}", f"{bm}x{bn}x{bk} g{gm} w{warps} s{stages}", f"{ms:.3f} ms", f"{flops / ms / 1e9:,.0f} TFLOP/s", f"{lib_ms / ms:.3f}x cuBLAS")
            ms = bench(lambda: matmul(a, b))
            best = ns["matmul_kernel"].best_config
            line(
                f"matmul {str(dtype)[6:]} {n}", "SOLUTION (autotuned)", f"{ms:.3f} ms", f"{flops / ms / 1e9:,.0f} TFLOP/s",
                f"cuBLAS {lib_ms:.3f} ms {flops / lib_ms / 1e9:,.0f} TFLOP/s", f"ratio {lib_ms / ms:.3f}x", f"picked {best}",
            )
        p = registry.get("act4.matmul_bf16" if dtype == torch.bfloat16 else "act4.matmul_fp16")
        for size in ((127, 129, 65), (333, 1823, 781)):
            inputs = p.make_inputs(size, 1, "cuda")
            ref = p.reference(**inputs)
            error = (matmul(**inputs).double() - ref).abs().max().item()
            lib = (p.library(**inputs).double() - ref).abs().max().item()
            line(f"matmul {str(dtype)[6:]} {size}", f"max error vs float64 {error:.3e}", f"cuBLAS {lib:.3e}")


ATTENTION_SWEEP = (
    # (BLOCK_M, BLOCK_N, num_warps, num_stages[, maxnreg]): the solution's two configurations first
    # (128x64 capped at 128 registers, two programs an SM at D = 128; 64x64 for D = 64), then the same
    # 128x64 tile uncapped, and the deeper pipelines and wider tiles the pointer design used to pick.
    (128, 64, 8, 2, 128),
    (64, 64, 4, 2),
    (128, 64, 8, 2),
    (128, 64, 8, 3),
    (128, 128, 8, 2),
    (64, 64, 4, 3),
)


def attention_descriptors(q, k, v, block_m: int, block_n: int) -> list:
    """Host TMA descriptors over the (B*H*S, D) rows of q, k and v, in the tiles of one configuration
    (what the solution's flash_attention builds from attention_config)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, H, S, D = q.shape
    return [TensorDescriptor(t, [B * H * S, D], [D, 1], [rows, D]) for t, rows in ((q, block_m), (k, block_n), (v, block_n))]


def tune_attention() -> None:
    from autograder import registry

    p = registry.get("act4.flash_attention")

    ns = load_solution("flash_attention")
    inner = ns["flash_attention_kernel"]
    flash_attention = ns["flash_attention"]
    section("FlashAttention forward: TFLOP/s and ratio to SDPA flash (target 1.1x), cuDNN shown")
    B, H, S = 4, 32, 4096
    for d in (128, 64):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = torch.empty_like(q)
        scale = 1.4426950408889634 / math.sqrt(d)
        for causal in (False, True):
            flops = 4 * B * H * S * S * d / (2 if causal else 1)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                flash_ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            try:
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    cudnn_ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                cudnn = f"cuDNN {cudnn_ms:.3f} ms {flops / cudnn_ms / 1e9:,.0f} TFLOP/s"
            except RuntimeError as exc:
                cudnn = f"cuDNN unavailable ({str(exc)[:60]})"
            tag = f"attn D={d} {'causal' if causal else 'full'}"
            sweep = ATTENTION_SWEEP if d == 128 else ATTENTION_SWEEP[:4]
            for bm, bn, warps, stages, *cap in sweep:
                grid = (triton.cdiv(S, bm), B * H)
                name = f"M{bm} N{bn} w{warps} s{stages}" + (f" r{cap[0]}" if cap else "")
                # The kernel takes descriptors of q, k and v (contiguous here), their rows and the
                # output's strides.
                descriptors = attention_descriptors(q, k, v, bm, bn)
                try:
                    ms = bench(lambda: inner[grid](
                        *descriptors, out, scale, H, S, B * H * S, *out.stride()[:3],
                        HEAD_DIM=d, CAUSAL=causal, DESCRIPTORS=True, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages,
                        **({"maxnreg": cap[0]} if cap else {}),
                    ))
                except Exception as exc:  # noqa: BLE001 -- out of shared memory: report and go on
                    line(tag, name, f"failed: {type(exc).__name__}")
                    continue
                line(tag, name, f"{ms:.3f} ms", f"{flops / ms / 1e9:,.0f} TFLOP/s", f"{flash_ms / ms:.3f}x SDPA flash")
            ms = bench(lambda: flash_attention(q, k, v, causal))
            line(
                tag, "SOLUTION", f"{ms:.3f} ms", f"{flops / ms / 1e9:,.0f} TFLOP/s",
                f"SDPA flash {flash_ms:.3f} ms {flops / flash_ms / 1e9:,.0f} TFLOP/s", f"ratio {flash_ms / ms:.3f}x",
                cudnn, f"config {ns['attention_config'](d)}",
            )
    for size in ((1, 4, 127, 64, True), (2, 2, 129, 128, False), (1, 8, 1000, 128, True), (1, 4, 1000, 64, False)):
        inputs = p.make_inputs(size, 1, "cuda")
        ref = p.reference(**inputs)
        error = (flash_attention(**inputs).double() - ref).abs().max().item()
        lib = (p.library(**inputs).double() - ref).abs().max().item()
        line(f"attn {size}", f"max error vs float64 {error:.3e}", f"SDPA flash {lib:.3e}")


def main() -> None:
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, Triton {triton.__version__}")
    copy_bw = copy_bandwidth()
    print(f"device copy bandwidth (do_bench, 1 GiB each way): {copy_bw / 1e9:,.0f} GB/s")
    tune_softmax(copy_bw)
    tune_matmul()
    tune_attention()
    print(f"\ndone in {time.perf_counter() - STARTED:.0f} s")


if __name__ == "__main__":
    main()
