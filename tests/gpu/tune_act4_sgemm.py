"""Tuning record for Act 4's SGEMM progression: the nine CUDA-core reference kernels, exactly as the
solution notebooks define them, checked against a float64 product and timed beside cuBLAS SGEMM (TF32
off) in the same run with the grader's own protocol (L2 flushed before each call, synchronised end
event); then a sweep of the double-buffered kernel's tile sizes (BM, BN, BK, TM, TN, blocks per SM).
tests/gpu/tune_act4_warptile.py times the last steps, the TF32 one included, and sweeps warp tiling.
Also writes every timing as act4_sgemm_tuning.json into $GPU_OUT (the GPU run's working folder, which
its archive keeps; _build/ when run by hand).

Run on a GPU (the six-step version took under 90 s on an H100/H200; the three steps added since take
seconds more): python tests/gpu/tune_act4_sgemm.py
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

import cupy as cp
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import registry, timing  # noqa: E402
from autograder.problems.act4 import matmul as act4_matmul  # noqa: E402

STEPS = ("naive", "coalesced", "smem", "1d_tiling", "2d_tiling", "vectorized", "conflict_free", "double_buffered", "warptiling")
# (step, sizes timed): the naive kernel also at 2048^3, where the grader times it; 8192^3 only for
# the kernels that take well under a second there.
TIMED = {
    "naive": (2048, 4096),
    "coalesced": (4096,),
    "smem": (4096,),
    "1d_tiling": (4096,),
    "2d_tiling": (4096, 8192),
    "vectorized": (4096, 8192),
    "conflict_free": (4096, 8192),
    "double_buffered": (4096, 8192),
    "warptiling": (4096, 8192),
}
# Checked against float64 first: ragged on every side (scalar path), and K, N multiples of 4 (the
# float4 path of steps 6 to 9) with every dimension off the tiles.
CHECK_SHAPES = ((1823, 781, 517), (1000, 1004, 516))
# (BM, BN, BK, TM, TN, MIN_BLOCKS) of the double-buffered kernel (the vectorised step before the split).
SWEEP = (
    (128, 128, 8, 8, 8, 2),
    (128, 128, 8, 8, 8, 1),
    (128, 128, 16, 8, 8, 1),
    (128, 128, 16, 8, 8, 2),
    (128, 64, 8, 8, 8, 2),
    (64, 128, 8, 8, 8, 2),
    (128, 64, 16, 8, 8, 2),
    (64, 64, 8, 8, 8, 4),
)
_SOURCE_STRING = re.compile(r'(\w+_SOURCE) = r"""\n(.*?)"""', re.S)


def solution_code(step: str) -> str:
    nb = json.loads((ROOT / "solutions" / "act4-kernels" / f"sgemm_{step}.ipynb").read_text())
    return "".join(next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))["source"])


def load_solution(step: str):
    namespace: dict = {}
    exec(compile(solution_code(step), f"sgemm_{step}", "exec"), namespace)
    return namespace[f"sgemm_{step}"]


def cublas(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return act4_matmul.sgemm_library(a, b)


def median_ms(timer: timing.Timer, call, calls: int) -> float:
    call()
    torch.cuda.synchronize()
    return statistics.median(timer.time_call(call)[0] for _ in range(calls))


def calls_for(ms_estimate: float) -> int:
    return max(3, min(20, int(300 / max(ms_estimate, 1e-3))))


def max_error(out, a: torch.Tensor, b: torch.Tensor, ref: torch.Tensor) -> float:
    got = torch.from_dlpack(out) if not isinstance(out, torch.Tensor) else out
    return float((got.double() - ref).abs().max())


def check(fn, shapes=CHECK_SHAPES) -> list[tuple[str, float, float, bool]]:
    rows = []
    for m, n, k in shapes:
        gen = torch.Generator(device="cuda").manual_seed(m * 7 + n)
        a = torch.randn(m, k, device="cuda", generator=gen)
        b = torch.randn(k, n, device="cuda", generator=gen)
        ref = a.double() @ b.double()
        lib = max_error(cublas(a, b), a, b, ref)
        err = max_error(fn(cp.from_dlpack(a), cp.from_dlpack(b)), a, b, ref)
        ok = err <= registry.get("act4.sgemm_vectorized").tolerance_factor * max(lib, 1.19e-7 * float(ref.abs().max()))
        rows.append((f"{m}x{n}x{k}", err, lib, ok))
    return rows


def main() -> None:
    started = time.perf_counter()
    torch.manual_seed(0)
    timer = timing.Timer()
    print(f"{torch.cuda.get_device_name()}; CuPy {cp.__version__}, torch {torch.__version__}")
    results: dict = {"device": torch.cuda.get_device_name(), "steps": [], "sweep": []}

    matrices = {}
    library_ms = {}
    for n in sorted({n for sizes in TIMED.values() for n in sizes}):
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        matrices[n] = (a, b, cp.from_dlpack(a), cp.from_dlpack(b))
        library_ms[n] = median_ms(timer, lambda a=a, b=b: cublas(a, b), 10)
        print(f"cuBLAS SGEMM (TF32 off) {n}^3: {library_ms[n]:8.3f} ms {2 * n**3 / library_ms[n] / 1e9:6.1f} TFLOP/s")

    print("\nstep          check (max error, cuBLAS's)                   size    ms        TFLOP/s  x cuBLAS")
    for step in STEPS:
        fn = load_solution(step)
        checks = check(fn)
        shown = "; ".join(f"{s} {e:.1e}/{lib:.1e}{'' if ok else ' WRONG'}" for s, e, lib, ok in checks)
        for n in TIMED[step]:
            _, _, a, b = matrices[n]
            first = median_ms(timer, lambda a=a, b=b, fn=fn: fn(a, b), 1)
            ms = median_ms(timer, lambda a=a, b=b, fn=fn: fn(a, b), calls_for(first))
            tflops = 2 * n**3 / ms / 1e9
            ratio = library_ms[n] / ms
            print(f"{step:<13} {shown:<45} {n:>5}^3 {ms:9.3f} {tflops:8.2f} {ratio:8.3f}")
            results["steps"].append(
                {"step": step, "n": n, "ms": ms, "tflops": tflops, "cublas_ms": library_ms[n], "ratio": ratio, "correct": all(c[3] for c in checks)}
            )
            shown = ""

    print("\ndouble-buffered kernel sweep (BM, BN, BK, TM, TN, MIN_BLOCKS): threads, check, 4096^3 and 8192^3")
    # The last source string of the cell is the step's own; the first is the step it starts from.
    source = re.findall(r'SGEMM_DOUBLE_BUFFERED_SOURCE = r"""\n(.*?)"""', solution_code("double_buffered"), re.S)[-1]
    for bm, bn, bk, tm, tn, min_blocks in SWEEP:
        threads = (bm // tm) * (bn // tn)
        options = tuple(f"-D{k}={v}" for k, v in (("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn), ("MIN_BLOCKS", min_blocks)))
        label = f"({bm:>3}, {bn:>3}, {bk:>2}, {tm}, {tn}, {min_blocks})"
        try:
            vec = cp.RawKernel(source, "sgemm_double_buffered_kernel", options=options)
            vec.compile()
        except Exception as exc:  # a static_assert (tile not divisible into float4 loads) or too much shared memory
            print(f"  {label} {threads:>4} threads: does not compile ({str(exc).splitlines()[0][:80]})")
            continue

        def run(a, b, vec=vec, bm=bm, bn=bn, threads=threads):
            m, k = a.shape
            n = b.shape[1]
            c = cp.empty((m, n), dtype=cp.float32)
            vec(((n + bn - 1) // bn, (m + bm - 1) // bm), (threads,), (a, b, c, cp.int32(m), cp.int32(n), cp.int32(k)))
            return c

        checks = check(run, shapes=((1000, 1004, 516),))
        row = {"config": [bm, bn, bk, tm, tn, min_blocks], "threads": threads, "correct": checks[0][3], "registers": vec.attributes["num_regs"]}
        line = f"  {label} {threads:>4} threads {row['registers']:>3} regs: {'ok' if checks[0][3] else 'WRONG'} {checks[0][1]:.1e}"
        for n in (4096, 8192):
            _, _, a, b = matrices[n]
            ms = median_ms(timer, lambda a=a, b=b, run=run: run(a, b), 10 if n == 4096 else 5)
            row[f"ratio_{n}"] = library_ms[n] / ms
            row[f"tflops_{n}"] = 2 * n**3 / ms / 1e9
            line += f" | {row[f'tflops_{n}']:6.2f} TFLOP/s {row[f'ratio_{n}']:.3f}x"
        print(line)
        results["sweep"].append(row)
    good = [r for r in results["sweep"] if r["correct"]]
    if good:
        best = max(good, key=lambda r: (r["ratio_4096"] * r["ratio_8192"]) ** 0.5)
        print(f"best: (BM, BN, BK, TM, TN, MIN_BLOCKS) = {tuple(best['config'])}, geomean {(best['ratio_4096'] * best['ratio_8192']) ** 0.5:.3f}x cuBLAS")
        results["best"] = best
    out = Path(os.environ.get("GPU_OUT", ROOT / "_build")) / "act4_sgemm_tuning.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
