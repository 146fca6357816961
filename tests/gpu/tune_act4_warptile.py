"""Tuning record for the end of Act 4's SGEMM progression: steps 6 to 9 (float4 and A transposed,
conflict-free reads, double buffering, warp tiling with its autotuner) and step 10 (TF32 tensor cores
in Triton), exactly as their solution notebooks define them, each checked against a float64 product
and timed beside cuBLAS with TF32 off and on, in one run, with the grader's own protocol (L2 flushed
before each call, synchronised end event); then step 10's two designs with fixed configurations
(TF32_VARIANTS): B read as stored, N-major (the first design, which on Hopper leaves wgmma's B
operand transposed in registers), and B^T written first by the notebook's transpose kernel so that
both operands are K-major; then a sweep of the warp-tiling kernel's tile shapes
(BM, BN, BK, WM, WN, WMITER, WNITER, MIN_BLOCKS), with each one's registers and local memory as the
driver reports them. Writes every timing as act4_warptile_tuning.json into $GPU_OUT (the GPU run's
working folder; _build/ when run by hand).

Run on a GPU (the CUDA C steps and sweep took about a minute on an H100/H200, most of it compiling;
step 10's six fixed variants add an estimated 20 to 30 s, not yet measured; --tf32-only runs cuBLAS
and step 10 alone):
python tests/gpu/tune_act4_warptile.py [--tf32-only]
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import cupy as cp
import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import checking, registry, timing  # noqa: E402
from autograder.problems.act4 import matmul as act4_matmul  # noqa: E402
from tests.gpu.tune_act4_sgemm import calls_for, check, load_solution, median_ms, solution_code  # noqa: E402

STEPS = ("2d_tiling", "vectorized", "conflict_free", "double_buffered", "warptiling")
SIZES = (4096, 8192)
NAMES = ("BM", "BN", "BK", "WM", "WN", "WMITER", "WNITER", "MIN_BLOCKS")
# The notebook's four configurations first, then neighbours: deeper BK, taller or wider blocks and
# warps, fewer blocks per SM (more registers per thread). nvcc 13 for sm_90 compiled them all, with
# local memory (spills) only in (128, 128, 16, 32, 64, 2, 2, 2): BK = 16 held to two blocks per SM.
# A shape that breaks a static_assert or 48 KB of static shared memory is reported as not compiling.
SWEEP = (
    (128, 128, 8, 32, 64, 2, 2, 2),
    (128, 128, 8, 64, 32, 2, 2, 2),
    (64, 128, 16, 32, 64, 2, 2, 3),
    (128, 256, 8, 64, 64, 2, 4, 1),
    (128, 128, 8, 32, 64, 2, 2, 1),
    (128, 128, 16, 32, 64, 2, 2, 2),
    (128, 128, 16, 32, 64, 2, 2, 1),
    (128, 128, 8, 64, 64, 4, 2, 2),
    (256, 128, 8, 64, 64, 4, 2, 1),
    (128, 64, 16, 32, 32, 2, 1, 2),
    (64, 128, 8, 32, 64, 2, 2, 3),
)


# Step 10's designs beside each other, fixed configurations (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps):
# 128x128x32 and 128x256x32 (48 KB a stage) and 128x128x64 (64 KB a stage), 3 or 4 stages in 228 KB.
TF32_CONFIGS = ((128, 128, 32, 4, 8), (128, 256, 32, 3, 8), (128, 128, 64, 3, 8))


@triton.jit
def tf32_nmajor_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
):
    """Step 10's first design, for comparison: B's (BLOCK_K, BLOCK_N) tile loaded as stored, N
    contiguous. Hopper's wgmma takes 32-bit B from shared memory K-major only, so Triton transposes
    each tile in registers on its way to shared memory and does not pipeline that load. Sizes here are
    multiples of the blocks: no masks."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    in_group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // in_group) * GROUP_SIZE_M
    group_m = min(tl.cdiv(M, BLOCK_SIZE_M) - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, input_precision="tf32")
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc)


def tf32_variants(namespace: dict) -> list[tuple[str, object]]:
    """(label, fn(a, b)) for each design and configuration: the N-major kernel above, and the
    notebook's transpose then its K-major kernel (its autotuner bypassed through .fn)."""
    kmajor = namespace["sgemm_tf32_kernel"].fn  # the heuristics (EVEN_K) under the autotuner
    transpose, block = namespace["transpose_kernel"], namespace["TRANSPOSE_BLOCK"]
    variants = []
    for bm, bn, bk, stages, warps in TF32_CONFIGS:
        meta = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "num_stages": stages, "num_warps": warps}

        def nmajor(a, b, meta=meta):
            m, k = a.shape
            n = b.shape[1]
            c = torch.empty((m, n), device=a.device)
            grid = (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)
            tf32_nmajor_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **meta)
            return c

        def kmajor_via_transpose(a, b, meta=meta):
            m, k = a.shape
            n = b.shape[1]
            bt = torch.empty((n, k), device=b.device)
            transpose[(triton.cdiv(k, block), triton.cdiv(n, block))](b, bt, k, n, b.stride(0), b.stride(1), bt.stride(0), bt.stride(1), BLOCK_R=block, BLOCK_C=block)
            c = torch.empty((m, n), device=a.device)
            grid = (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)
            kmajor[grid](a, bt, c, m, n, k, a.stride(0), a.stride(1), bt.stride(0), bt.stride(1), c.stride(0), c.stride(1), **meta)
            return c

        shown = f"{bm}x{bn}x{bk} s{stages} w{warps}"
        variants += [(f"N-major B {shown}", nmajor), (f"B^T K-major {shown}", kmajor_via_transpose)]
    return variants


def transpose_ms(timer, namespace: dict, b: torch.Tensor) -> float:
    """The notebook's transpose alone: what the K-major design pays before its product."""
    transpose, block = namespace["transpose_kernel"], namespace["TRANSPOSE_BLOCK"]
    k, n = b.shape
    bt = torch.empty((n, k), device=b.device)

    def run():
        transpose[(triton.cdiv(k, block), triton.cdiv(n, block))](b, bt, k, n, b.stride(0), b.stride(1), bt.stride(0), bt.stride(1), BLOCK_R=block, BLOCK_C=block)

    run()
    return median_ms(timer, run, 10)


def load_triton_solution(notebook: str, function: str):
    """The notebook's solution cell run from a file of its own (Triton reads a kernel's source
    through inspect, which needs one)."""
    nb = json.loads((ROOT / "solutions" / f"{notebook}.ipynb").read_text())
    code = "".join(next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))["source"])
    path = Path(tempfile.mkdtemp(prefix="tune-warptile-")) / f"{Path(notebook).name}.py"
    path.write_text(code)
    namespace = {"__name__": f"tuned_{Path(notebook).name}", "__file__": str(path)}
    exec(compile(code, str(path), "exec"), namespace)
    return namespace


def check_tf32(fn, shapes=((1823, 781, 517), (1000, 1004, 516), (1, 2049, 300))) -> list[tuple[str, float, float, bool]]:
    """Against float64, with the grader's own tolerance (tolerance_factor x the larger of cuBLAS
    TF32's error and the TF32 error model's); the middle number is cuBLAS's error."""
    problem = registry.get("act4.sgemm_tf32")
    rows = []
    for m, n, k in shapes:
        gen = torch.Generator(device="cuda").manual_seed(m + n)
        inputs = {"A": torch.randn(m, k, device="cuda", generator=gen), "B": torch.randn(k, n, device="cuda", generator=gen)}
        ref = problem.reference(**inputs)
        tol = checking.problem_tolerance(problem, inputs, ref, problem.library(**inputs), torch.float32)
        ok, err, _ = checking.compare(fn(**inputs), ref, tol)
        err = err if ok else float((fn(**inputs).double() - ref).abs().max())
        rows.append((f"{m}x{n}x{k}", err, tol.library_max_error, ok))
    return rows


def rate(n: int, ms: float) -> float:
    return 2 * n**3 / ms / 1e9


def main() -> None:
    started = time.perf_counter()
    torch.manual_seed(0)
    timer = timing.Timer()
    print(f"{torch.cuda.get_device_name()}; CuPy {cp.__version__}, torch {torch.__version__}")
    results: dict = {"device": torch.cuda.get_device_name(), "cublas": {}, "steps": [], "sweep": []}

    matrices, fp32_ms, tf32_ms = {}, {}, {}
    for n in SIZES:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        matrices[n] = (a, b, cp.from_dlpack(a), cp.from_dlpack(b))
        fp32_ms[n] = median_ms(timer, lambda a=a, b=b: act4_matmul.sgemm_library(a, b), 10)
        tf32_ms[n] = median_ms(timer, lambda a=a, b=b: act4_matmul.sgemm_tf32_library(a, b), 10)
        results["cublas"][n] = {"fp32_ms": fp32_ms[n], "tf32_ms": tf32_ms[n]}
        print(f"cuBLAS {n}^3: TF32 off {fp32_ms[n]:7.3f} ms {rate(n, fp32_ms[n]):6.1f} TFLOP/s | TF32 on {tf32_ms[n]:7.3f} ms {rate(n, tf32_ms[n]):6.1f} TFLOP/s")

    if "--tf32-only" in sys.argv:
        tf32_part(timer, matrices, fp32_ms, tf32_ms, results)
        write(results, started)
        return

    print("\nstep             check (max error / cuBLAS's)                       size     ms   TFLOP/s  x cuBLAS fp32")
    warptiling = None
    for step in STEPS:
        fn = load_solution(step)
        if step == "warptiling":
            warptiling = fn
        checks = check(fn)
        shown = "; ".join(f"{s} {e:.1e}/{lib:.1e}{'' if ok else ' WRONG'}" for s, e, lib, ok in checks)
        for n in SIZES:
            _, _, a, b = matrices[n]
            first = median_ms(timer, lambda a=a, b=b, fn=fn: fn(a, b), 1)
            ms = median_ms(timer, lambda a=a, b=b, fn=fn: fn(a, b), calls_for(first))
            ratio = fp32_ms[n] / ms
            print(f"{step:<16} {shown:<50} {n:>5}^3 {ms:7.3f} {rate(n, ms):8.2f} {ratio:8.3f}")
            results["steps"].append({"step": step, "n": n, "ms": ms, "tflops": rate(n, ms), "ratio": ratio, "library": "cuBLAS fp32", "correct": all(c[3] for c in checks)})
            shown = ""
    chosen = {k: v for k, v in warptiling.__globals__["_chosen"].items() if k[0] in SIZES}
    print("warp tiling's autotuner chose (BM, BN, BK, WM, WN, WMITER, WNITER, MIN_BLOCKS):", {f"{k[0]}^3": v for k, v in chosen.items()})
    results["warptiling_chosen"] = {str(k[0]): list(v) for k, v in chosen.items()}

    tf32_part(timer, matrices, fp32_ms, tf32_ms, results)

    print("\nwarp-tiling sweep (BM, BN, BK, WM, WN, WMITER, WNITER, MIN_BLOCKS): threads, registers, local bytes, check, 4096^3 and 8192^3")
    codes = re.findall(r'SGEMM_WARPTILING_SOURCE = r"""\n(.*?)"""', solution_code("warptiling"), re.S)
    source = codes[-1]
    for config in SWEEP:
        bm, bn, _, wm, wn = config[:5]
        threads = (bm // wm) * (bn // wn) * 32
        label = str(config)
        try:
            kernel = cp.RawKernel(source, "sgemm_warptiling_kernel", options=tuple(f"-D{k}={v}" for k, v in zip(NAMES, config, strict=True)))
            kernel.compile()
            regs, local = kernel.attributes["num_regs"], kernel.attributes["local_size_bytes"]
        except Exception as exc:  # a static_assert, or more than 48 KB of static shared memory
            print(f"  {label} {threads:>4} threads: does not compile ({str(exc).splitlines()[0][:80]})")
            continue

        def run(a, b, kernel=kernel, bm=bm, bn=bn, threads=threads):
            m, k = a.shape
            n = b.shape[1]
            c = cp.empty((m, n), dtype=cp.float32)
            kernel(((n + bn - 1) // bn, (m + bm - 1) // bm), (threads,), (a, b, c, cp.int32(m), cp.int32(n), cp.int32(k)))
            return c

        checks = check(run, shapes=((1000, 1004, 516),))
        row = {"config": list(config), "threads": threads, "registers": regs, "local_bytes": local, "correct": checks[0][3]}
        line = f"  {label} {threads:>4} thr {regs:>3} regs {local:>4} B local: {'ok' if checks[0][3] else 'WRONG'} {checks[0][1]:.1e}"
        for n in SIZES:
            _, _, a, b = matrices[n]
            ms = median_ms(timer, lambda a=a, b=b, run=run: run(a, b), 10 if n == 4096 else 5)
            row[f"ratio_{n}"] = fp32_ms[n] / ms
            row[f"tflops_{n}"] = rate(n, ms)
            line += f" | {row[f'tflops_{n}']:6.2f} TFLOP/s {row[f'ratio_{n}']:.3f}x"
        print(line)
        results["sweep"].append(row)
    good = [r for r in results["sweep"] if r["correct"]]
    if good:
        best = max(good, key=lambda r: (r["ratio_4096"] * r["ratio_8192"]) ** 0.5)
        print(f"best: {tuple(best['config'])}, geomean {(best['ratio_4096'] * best['ratio_8192']) ** 0.5:.3f}x cuBLAS fp32")
        results["best"] = best
    write(results, started)


def tf32_part(timer, matrices: dict, fp32_ms: dict, tf32_ms: dict, results: dict) -> None:
    """Step 10: the notebook's solution (autotuned) and both designs at fixed configurations, each
    checked with the grader's tolerance and timed beside cuBLAS TF32."""
    namespace = load_triton_solution("act4-kernels/sgemm_tf32", "sgemm_tf32")
    tf32 = namespace["sgemm_tf32"]
    checks = check_tf32(lambda A, B: tf32(A, B))
    shown = "; ".join(f"{s} {e:.1e}/{lib:.1e}{'' if ok else ' WRONG'}" for s, e, lib, ok in checks)
    for n in SIZES:
        a, b, _, _ = matrices[n]
        tf32(a, b)
        ms = median_ms(timer, lambda a=a, b=b: tf32(a, b), 10)
        ratio = tf32_ms[n] / ms
        print(f"{'tf32 (Triton)':<16} {shown:<50} {n:>5}^3 {ms:7.3f} {rate(n, ms):8.2f} {ratio:8.3f}x cuBLAS TF32, {fp32_ms[n] / ms:.2f}x cuBLAS fp32")
        best = getattr(namespace["sgemm_tf32_kernel"], "best_config", None)
        results["steps"].append({"step": "tf32", "n": n, "ms": ms, "tflops": rate(n, ms), "ratio": ratio, "library": "cuBLAS TF32", "ratio_fp32": fp32_ms[n] / ms, "correct": all(c[3] for c in checks), "config": str(best)})
        shown = ""
    results["tf32_transpose_ms"] = {n: transpose_ms(timer, namespace, matrices[n][1]) for n in SIZES}
    print("notebook's transpose of B alone: " + ", ".join(f"{n}^2 {ms:.3f} ms" for n, ms in results["tf32_transpose_ms"].items()))
    print("\nstep 10 designs (BLOCK_M x BLOCK_N x BLOCK_K, stages, warps): check, then per size ms, TFLOP/s, x cuBLAS TF32")
    results["tf32_variants"] = []
    for label, fn in tf32_variants(namespace):
        row = {"variant": label}
        try:
            checks = check_tf32(lambda A, B, fn=fn: fn(A, B), shapes=((1024, 1024, 512),))
            row["correct"] = checks[0][3]
            line = f"  {label:<34} {'ok' if row['correct'] else 'WRONG'} {checks[0][1]:.1e}"
            for n in SIZES:
                a, b, _, _ = matrices[n]
                ms = median_ms(timer, lambda a=a, b=b, fn=fn: fn(a, b), 10 if n == 4096 else 5)
                row[f"ms_{n}"], row[f"tflops_{n}"], row[f"ratio_{n}"] = ms, rate(n, ms), tf32_ms[n] / ms
                line += f" | {n}^3 {ms:7.3f} ms {rate(n, ms):6.1f} TFLOP/s {tf32_ms[n] / ms:.3f}x"
        except Exception as exc:  # out of shared memory or registers for this configuration
            row["error"] = str(exc).splitlines()[0][:100]
            line = f"  {label:<34} does not run: {row['error']}"
        print(line)
        results["tf32_variants"].append(row)
    good = [r for r in results["tf32_variants"] if r.get("correct") and "ratio_4096" in r]
    if good:
        best = max(good, key=lambda r: (r["ratio_4096"] * r["ratio_8192"]) ** 0.5)
        print(f"best step 10 design: {best['variant']}, {best['ratio_4096']:.3f}x and {best['ratio_8192']:.3f}x cuBLAS TF32")


def write(results: dict, started: float) -> None:
    out = Path(os.environ.get("GPU_OUT", ROOT / "_build")) / "act4_warptile_tuning.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
