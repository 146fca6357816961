"""Tuning record for the end of Act 4's SGEMM progression: steps 6 to 9 (float4 and A transposed,
conflict-free reads, double buffering, warp tiling with its autotuner) and step 10 (TF32 tensor cores
in Triton), exactly as their solution notebooks define them, each checked against a float64 product
and timed beside cuBLAS with TF32 off and on, in one run, with the grader's own protocol (L2 flushed
before each call, synchronised end event); then a sweep of the warp-tiling kernel's tile shapes
(BM, BN, BK, WM, WN, WMITER, WNITER, MIN_BLOCKS), with each one's registers and local memory as the
driver reports them. Writes every timing as act4_warptile_tuning.json into $GPU_OUT (the GPU run's
working folder; _build/ when run by hand).

Run on a GPU (about a minute on an H100/H200, most of it compiling):
python tests/gpu/tune_act4_warptile.py
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import registry, timing  # noqa: E402
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


def check_tf32(fn) -> list[tuple[str, float, float, bool]]:
    """Against float64, allowed tolerance_factor x cuBLAS TF32's own error, as the grader allows."""
    factor = registry.get("act4.sgemm_tf32").tolerance_factor
    rows = []
    for m, n, k in ((1823, 781, 517), (1000, 1004, 516)):
        gen = torch.Generator(device="cuda").manual_seed(m + n)
        a = torch.randn(m, k, device="cuda", generator=gen)
        b = torch.randn(k, n, device="cuda", generator=gen)
        ref = a.double() @ b.double()
        lib = float((act4_matmul.sgemm_tf32_library(a, b).double() - ref).abs().max())
        err = float((fn(a, b).double() - ref).abs().max())
        rows.append((f"{m}x{n}x{k}", err, lib, err <= factor * lib))
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

    namespace = load_triton_solution("act4-kernels/sgemm_tf32", "sgemm_tf32")
    tf32 = namespace["sgemm_tf32"]
    checks = check_tf32(tf32)
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
    out = Path(os.environ.get("GPU_OUT", ROOT / "_build")) / "act4_warptile_tuning.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
