"""Issue 18: candidate designs for Act 7's int4 GEMV (tests/gpu/act7_int4_candidates.py) against the
reference solution's kernel and a bf16 cuBLAS GEMV, in one run.

For each weight shape (4096 x 4096, 8192 x 8192) every configuration of every design runs at batch 1;
the two fastest configurations of each design also run at batch 4 and 16. Every call is first checked
against the float64 dequantise-then-matmul with the grader's tolerance (autograder.checking, fresh
random inputs); a wrong one is reported and not timed. Two times per row:

- do_bench: triton.testing.do_bench median (L2 flushed before every call), on one set of inputs;
- window: 32 calls queued behind a 2 ms GPU sleep, each on the next of several input sets (together
  more than three L2s), timed between CUDA events, per call, median of 5 windows: back to back, as
  the grader's timed windows are, so a second kernel's launch gap counts.

cuBLAS is timed both ways: reference.dense_gemv (the grader's baseline: a bf16 weight of the same
shape, a different one each call) and x @ W.t() on one bf16 W. Each row prints us, GB/s of the
bytes the int4 product must read (problem.bytes_moved) and the ratio to cuBLAS timed the same way.

Every row also goes to the JSON file --out (default: $GPU_RUN_DIR/act7_int4_variants.json, else
./act7_int4_variants.json), rewritten after each row so a run cut short keeps what it measured.

Run on a GPU (about 2-3 minutes, most of it compiling), from the repository root:
    PYTHONPATH=$PWD python3 tests/gpu/tune_act7_int4_variants.py [--out FILE] [--deadline S]
On a CPU (every design and configuration checked under the Triton interpreter, small shapes):
    PYTHONPATH=$PWD python3 tests/gpu/tune_act7_int4_variants.py --interpret
    PYTHONPATH=$PWD python3 tests/gpu/tune_act7_int4_variants.py --smoke --out /tmp/x.json   (this script's
    GPU path, on a CPU: times mean nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# The interpreter is chosen before Triton is imported.
if "--interpret" in sys.argv or "--smoke" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import checking, registry  # noqa: E402
from autograder.problems.act7.int4_gemv import reference  # noqa: E402
from tests.gpu import act7_int4_candidates as candidates  # noqa: E402

PROBLEM = registry.get("act7.int4_gemv")
SHAPES = ((4096, 4096), (8192, 8192))
BATCHES = (1, 4, 16)
# --smoke runs main() itself on a CPU under the interpreter, on one small shape, timing nothing worth
# reading: a check of this script, not of the kernels.
SMOKE = "--smoke" in sys.argv
DEVICE = "cpu" if SMOKE else "cuda"
if SMOKE:
    SHAPES, BATCHES = ((160, 384),), (1, 3)
# Configurations per design: block sizes, warps, a register cap (maxnreg) and SPLIT_K for the split
# designs. "solution" is the reference solution's kernel as it stands, in its own autotune
# configurations (read from the notebook).
CONFIGS = {
    # Bytes in flight: every program holds its next step (or two) in registers, so the whole GPU has
    # about N x (bytes of a row a step) x (steps ahead) in flight while every program is resident.
    # Rows a thread holds (R = BLOCK_N / rows a CTA tile covers) set how often x is converted: about
    # 4.1 instructions a weight at R = 4, 3.4 at R = 8 (SASS from Triton 3.6, sm_90). Registers per
    # thread (ptxas) in the comments; "spills" where maxnreg forces some.
    "prefetch": [
        {"BLOCK_N": 16, "GROUPS_PER_STEP": 16, "num_warps": 8},  # 123 regs; 4096: 256 programs, all of K in flight
        {"BLOCK_N": 8, "GROUPS_PER_STEP": 16, "num_warps": 4},  # 125; 4096: 512 programs, 4 an SM
        {"BLOCK_N": 16, "GROUPS_PER_STEP": 16, "num_warps": 4},  # 241, R = 8
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 8},  # 119, R = 4
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 4},  # 244, R = 8
        {"BLOCK_N": 64, "GROUPS_PER_STEP": 8, "num_warps": 8},  # 243, R = 8
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 4, "maxnreg": 128},  # spills 240 bytes
        {"BLOCK_N": 16, "GROUPS_PER_STEP": 8, "num_warps": 8},  # 120, R = 2
    ],
    "prefetch2": [
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 8, "maxnreg": 128},  # 126; 8192: 256 programs, 64 KB an SM
        {"BLOCK_N": 16, "GROUPS_PER_STEP": 8, "num_warps": 4, "maxnreg": 128},  # 126
        {"BLOCK_N": 64, "GROUPS_PER_STEP": 8, "num_warps": 16, "maxnreg": 128},  # 128
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 4, "num_warps": 4, "maxnreg": 128},  # 128
    ],
    "splitk_atomic": [
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 8, "SPLIT_K": 2},  # 4096: 256 programs, all of K in flight
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 4, "SPLIT_K": 2},  # R = 8
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 4, "maxnreg": 128, "SPLIT_K": 4},  # spills
        {"BLOCK_N": 64, "GROUPS_PER_STEP": 8, "num_warps": 8, "maxnreg": 128, "SPLIT_K": 2},  # spills
        {"BLOCK_N": 16, "GROUPS_PER_STEP": 16, "num_warps": 8, "SPLIT_K": 2},
    ],
    "splitk_two_pass": [
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 8, "SPLIT_K": 2},
        {"BLOCK_N": 32, "GROUPS_PER_STEP": 8, "num_warps": 4, "SPLIT_K": 2},
        {"BLOCK_N": 64, "GROUPS_PER_STEP": 8, "num_warps": 8, "maxnreg": 128, "SPLIT_K": 2},
    ],
}
WINDOW_CALLS = 32
WINDOWS = 5
SLEEP_CYCLES = 4_000_000  # about 2 ms at 1.98 GHz: every call of a window is queued before it starts


def solution_designs() -> tuple[dict, object]:
    """The reference solution's kernel in each of its autotune configurations, as launchers."""
    from tests.gpu.probe_small_calls import solution_module

    _, module = solution_module("act7.int4_gemv")
    configs = []
    for config in module.int4_gemv_configs():
        configs.append({**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages})
    return configs, module


def solution_launcher(module):
    kernel = module.int4_gemv_kernel.fn

    def launch(x, w_packed, scale, zero, config):
        words = w_packed.view(torch.int32)
        batch, k = x.shape
        n = words.shape[0]
        out = torch.empty((batch, n), dtype=torch.bfloat16, device=x.device)
        kernel[(batch, triton.cdiv(n, config["BLOCK_N"]))](
            x, words, scale, zero, out, batch, n, k,
            x.stride(0), words.stride(0), scale.stride(0), zero.stride(0), out.stride(0),
            GROUP=128, BLOCK_N=config["BLOCK_N"], GROUPS_PER_STEP=config["GROUPS_PER_STEP"],
            num_warps=config["num_warps"], num_stages=config.get("num_stages", 1),
        )
        return out

    return launch


def label(design: str, config: dict) -> str:
    short = {"BLOCK_N": "BN", "GROUPS_PER_STEP": "GPS", "num_warps": "w", "maxnreg": "reg", "SPLIT_K": "split", "num_stages": "st"}
    return design + " " + " ".join(f"{short.get(k, k)}={v}" for k, v in config.items())


def tolerance(inputs: dict):
    expected = PROBLEM.reference(**inputs)
    return expected, checking.derive_tolerance(expected, PROBLEM.library(**inputs), torch.bfloat16, PROBLEM.tolerance_factor)


def check(call, inputs: dict, expected, tol) -> tuple[bool, float, str]:
    try:
        out = call(**inputs)
        ok, error, _ = checking.compare(out, expected, tol)
        # Twice, for the atomic design: the second call finds the workspace its first left.
        out = call(**inputs)
        ok2, error2, _ = checking.compare(out, expected, tol)
    except Exception as exc:  # noqa: BLE001 -- a design that fails to compile or run is reported, not fatal
        return False, float("nan"), f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    return ok and ok2, max(error, error2), ""


def bench_us(fn) -> float:
    """triton.testing.do_bench's median (L2 flushed before every call), in microseconds."""
    if SMOKE:
        started = time.perf_counter()
        fn()
        return 1e6 * (time.perf_counter() - started)
    return 1e3 * triton.testing.do_bench(fn, return_mode="median")


def window_us(call, input_sets: list[dict]) -> float:
    """Per-call GPU time of WINDOW_CALLS calls queued back to back, each on the next input set."""
    if SMOKE:
        started = time.perf_counter()
        for inputs in input_sets[:2]:
            call(**inputs)
        return 1e6 * (time.perf_counter() - started) / 2
    times = []
    for _ in range(WINDOWS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        for c in range(WINDOW_CALLS):
            call(**input_sets[c % len(input_sets)])
        end.record()
        torch.cuda.synchronize()
        times.append(1e3 * start.elapsed_time(end) / WINDOW_CALLS)
    return sorted(times)[len(times) // 2]


def interpret() -> None:
    """Every design and configuration on small shapes under the Triton interpreter (the grader's
    tolerance): N no multiple of any block, K of 1, 3 and 11 groups (no multiple of a step), batch
    1, 3 and 16. The atomic design is called twice on every shape (its workspace is reused)."""
    from autograder import interpreter

    interpreter.install_guard()
    sizes = ((1, 1, 128), (1, 129, 256), (3, 17, 384), (16, 5, 256), (3, 70, 1408), (1, 33, 2048))
    failures = 0
    for size in sizes:
        inputs = PROBLEM.make_inputs(size, 11, "cpu")
        expected, tol = tolerance(inputs)
        for design, configs in CONFIGS.items():
            launcher = candidates.LAUNCHERS[design]
            for config in configs:
                ok, error, note = check(lambda launcher=launcher, config=config, **i: launcher(**i, config=config), inputs, expected, tol)
                failures += not ok
                print(f"{str(size):>16} {label(design, config):<64} {'ok' if ok else 'WRONG'} (error {error:.3g}, allowed {tol.atol:.3g} + {tol.rtol:.3g}|ref|) {note}", flush=True)
    print("every design right" if not failures else f"{failures} wrong", flush=True)
    sys.exit(1 if failures else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="the JSON file (default $GPU_RUN_DIR/act7_int4_variants.json, else ./)")
    parser.add_argument("--interpret", action="store_true", help="check every design on a CPU, time nothing")
    parser.add_argument("--deadline", type=float, default=230.0, help="seconds after which the remaining rows are skipped")
    parser.add_argument("--smoke", action="store_true", help="run this script's GPU path on a CPU (interpreter, one small shape)")
    args = parser.parse_args()
    if args.interpret:
        interpret()
        return
    started = time.perf_counter()
    out_path = Path(args.out) if args.out else Path(os.environ.get("GPU_RUN_DIR") or ".") / "act7_int4_variants.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    record: dict = {"device": "cpu (--smoke)" if SMOKE else torch.cuda.get_device_name(0), "triton": triton.__version__, "torch": torch.__version__, "rows": []}
    print(f"{record['device']}, Triton {record['triton']}, torch {record['torch']} -> {out_path}", flush=True)

    solution_configs, module = solution_designs()
    designs = {"solution": (solution_launcher(module), solution_configs)}
    for design, configs in CONFIGS.items():
        designs[design] = (candidates.LAUNCHERS[design], configs)

    def emit(row: dict, line: str) -> None:
        record["rows"].append(row)
        print(line, flush=True)
        out_path.write_text(json.dumps(record, indent=1) + "\n")

    for n, k in SHAPES:
        # Enough input sets for a window to read more than three L2s of fresh weights.
        l2 = 2**20 if SMOKE else torch.cuda.get_device_properties(0).L2_cache_size
        n_sets = max(2, -(-3 * l2 // int(PROBLEM.bytes_moved((1, n, k)))))
        best: dict = {}
        for batch in BATCHES:
            size = (batch, n, k)
            inputs = PROBLEM.make_inputs(size, 1000 + batch, DEVICE)
            input_sets = [PROBLEM.make_inputs(size, 2000 + batch * 100 + s, DEVICE) for s in range(n_sets)]
            expected, tol = tolerance(inputs)
            nbytes = PROBLEM.bytes_moved(size)
            dense = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16) * 0.01
            cublas = {
                "do_bench": bench_us(lambda inputs=inputs: reference.dense_gemv(**inputs)),
                "window": window_us(reference.dense_gemv, input_sets),
                "fixed_W_do_bench": bench_us(lambda x=inputs["x"], dense=dense: x @ dense.t()),
            }
            emit({"size": list(size), "design": "cuBLAS bf16", **{f"{key}_us": round(v, 2) for key, v in cublas.items()}},
                 f"\n{n}x{k}, batch {batch}: cuBLAS bf16 GEMV {cublas['do_bench']:.2f} us do_bench, {cublas['window']:.2f} us window "
                 f"(x @ W.t() on one W: {cublas['fixed_W_do_bench']:.2f} us); int4 must read {nbytes / 1e6:.1f} MB")
            for design, (launcher, configs) in designs.items():
                if batch > 1:
                    # The two fastest configurations of the design at batch 1 on this shape.
                    configs = [c for _, c in sorted(best.get(design, []), key=lambda t: t[0])[:2]]
                for config in configs:
                    name = label(design, config)
                    row = {"size": list(size), "design": design, "config": config}
                    if time.perf_counter() - started > args.deadline:
                        emit({**row, "skipped": "out of time"}, f"  {name:<66} skipped (past {args.deadline:.0f} s)")
                        continue

                    def call(launcher=launcher, config=config, **i):
                        return launcher(**i, config=config)

                    ok, error, note = check(call, inputs, expected, tol)
                    if not ok:
                        emit({**row, "wrong": True, "max_error": error, "note": note},
                             f"  {name:<66} WRONG, not timed: error {error:.3g} (allowed {tol.atol:.3g}) {note}")
                        continue
                    bench = bench_us(lambda call=call, inputs=inputs: call(**inputs))
                    window = window_us(call, input_sets)
                    if batch == 1:
                        best.setdefault(design, []).append((bench, config))
                    emit({**row, "do_bench_us": round(bench, 2), "window_us": round(window, 2), "GBps": round(nbytes / bench / 1e3),
                          "x_cublas_do_bench": round(cublas["do_bench"] / bench, 3), "x_cublas_window": round(cublas["window"] / window, 3),
                          "x_fixed_W": round(cublas["fixed_W_do_bench"] / bench, 3), "max_error": error},
                         f"  {name:<66} {bench:6.2f} us {nbytes / bench / 1e3:5.0f} GB/s {cublas['do_bench'] / bench:5.2f}x | "
                         f"window {window:6.2f} us {cublas['window'] / window:5.2f}x")
            inputs = input_sets = expected = dense = None
            if not SMOKE:
                torch.cuda.empty_cache()

    # The fastest configuration of each design at batch 1, by shape.
    print("\nbatch 1, fastest configuration of each design (do_bench; window):")
    for n, k in SHAPES:
        rows = [r for r in record["rows"] if r["size"] == [1, n, k] and "do_bench_us" in r and r["design"] != "cuBLAS bf16"]
        for design in designs:
            mine = [r for r in rows if r["design"] == design]
            if mine:
                r = min(mine, key=lambda r: r["do_bench_us"])
                print(f"  {n}x{k} {label(design, r['config']):<66} {r['do_bench_us']:6.2f} us {r['x_cublas_do_bench']:5.2f}x; "
                      f"window {r['window_us']:6.2f} us {r['x_cublas_window']:5.2f}x")
    record["seconds"] = round(time.perf_counter() - started)
    out_path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote {out_path}; {record['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
