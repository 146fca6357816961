"""Nsight Compute counters for the kernels the book explains: the ten SGEMM steps of Act 4 (their
solution notebooks' reference kernels, step 10 the Triton TF32 one), Act 1's two transposes and its
reduction, and Act 1's strided-read coalescing demo (book/act1-hierarchy/measure-hierarchy.ipynb) at
strides 1, 2, 4, 8, 16 and 32 floats. One launch of each is profiled, and the counters that explain
the speed-ups are written as JSON and CSV with a compact table:

- DRAM bytes read and written; L2 sectors requested by L1 (32 bytes each); global load requests and
  the L1 sectors they touched (coalescing: sectors per request);
- shared-memory wavefronts and bank conflicts, loads and stores;
- achieved occupancy (and the theoretical one), registers per thread;
- instructions executed: all, shared loads and stores, global loads and stores;
- FMA pipe and issue-slot utilisation, and the kernel's duration.

Run on a GPU machine with Nsight Compute (expected 90 to 120 s on an H100, most of it starting one
profiled process per kernel and compiling; no kernel is started after 140 s, --budget-s):

    GPU_OUT=$OUT python tests/gpu/profile_ncu.py

It writes into $GPU_OUT/ncu/ (_build/ncu/ when GPU_OUT is unset): counters.json ({kernel: {metric:
{"value", "unit"}}}), counters.csv (the same, one row per kernel and metric), summary.txt (the table
printed at the end) and run.json (device, ncu version, sizes, the ncu command of each kernel, what
failed and why); and $GPU_OUT/ncu.tar.gz with those four files and every ncu log (raw/), for a GPU
call that returns only a few files. `--dry-run` prints the ncu commands without running anything
(no GPU needed); `--only NAME,...` profiles a subset; `--kernel NAME` is the driver ncu runs.

How one kernel is profiled. Each kernel runs in a process of its own under

    ncu --target-processes all --profile-from-start off --kernel-name regex:^NAME$
        --launch-skip 1 --launch-count 1 --metrics ... python tests/gpu/profile_ncu.py --kernel STEP

The driver compiles the kernel and calls it once outside the profiler's window (the warm-up: CuPy's
and Triton's compilation, warp tiling's and Triton's autotuners, which launch the kernel a variable
number of times), then opens the window (cudaProfilerStart) and launches it twice: the first launch
is skipped by --launch-skip 1, the second is the one profiled (--launch-count 1). The strided read
has one process for its six strides: no launch outside the window, then stride 1 (skipped) and the
six strides in order (--launch-count 6), matched to ncu's results by their order. ncu replays the
profiled launch once per group of counters, with caches flushed before each pass and the clocks
locked to base (its defaults, written out in the command): the durations are for comparing kernels
with each other, not with the timing runs at boost clock.

Sizes. SGEMM at 4096^3 for all ten steps: A, B and C are 64 MiB each, more than an H100's 50 MiB
(or an H200's 60 MiB) of L2, so the DRAM counters show what each step's tiling saves; at 2048^3 the
three matrices (48 MiB) would nearly fit in L2 and every step would read about the compulsory bytes.
4096^3 is also the size the book times the later steps at; the naive kernel takes about 0.3 s there,
times the dozen or so replays. Transpose 8192 x 8192 and reduction 2^27 floats (the grader's first
bench sizes); the strided read as the book's demo runs it (2^22 floats read, x of 2^27 floats).

Fail soft: a kernel that ncu cannot profile is reported in the table and run.json and skipped. A
metric this ncu does not know is dropped for the rest of the run (and named); a kernel that kernel
replay cannot profile is retried once with --replay-mode application; ERR_NVGPUCTRPERM (counters
reserved for administrators) stops the run with the fix named; kernels past --budget-s are skipped.

On Colab (no Nsight Compute, counters usually refused) the learner-facing equivalents give times
only; the bytes, sectors and conflicts are the ones the book quotes from this script's run:

    import cupy as cp, torch
    from cupyx.profiler import benchmark
    print(benchmark(sgemm_vectorized, (A, B), n_repeat=20, n_warmup=3))  # GPU time per call
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        sgemm_tf32(a, b)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=5))  # time per kernel

and on a machine with ncu, one kernel's counters:

    ncu --profile-from-start off --kernel-name regex:^sgemm_vectorized_kernel$ --launch-skip 1 \\
        --launch-count 1 --metrics dram__bytes_read.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \\
        python tests/gpu/profile_ncu.py --kernel sgemm_vectorized
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Metric names as Nsight Compute spells them for sm_90 (Hopper); the shared-memory ones are those
# NVIDIA's own SharedMemoryConflicts rule reads.
METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "smsp__inst_executed.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
)

SGEMM_STEPS = ("naive", "coalesced", "smem", "1d_tiling", "2d_tiling", "vectorized", "conflict_free", "double_buffered", "warptiling", "tf32")
SGEMM_N = 4096
TRANSPOSE_SHAPE = (8192, 8192)
REDUCTION_N = 1 << 27
STRIDES = (1, 2, 4, 8, 16, 32)
STRIDED_N = 1 << 22  # floats read (and written), as the book's demo
SECTOR_BYTES = 32


@dataclass(frozen=True)
class Target:
    """One profiled process: `--kernel name` launches `kernel` once per label, in order."""

    name: str
    kernel: str
    labels: tuple[str, ...]
    what: str


TARGETS = (
    Target("strided_read", "strided_read_kernel", tuple(f"strided_read_{s}" for s in STRIDES), f"Act 1 coalescing demo: out[i] = x[i * stride], {STRIDED_N:,} floats, strides {STRIDES}"),
    Target("transpose_naive", "transpose_naive_kernel", ("transpose_naive",), f"Act 1 transpose, naive (strided writes), {TRANSPOSE_SHAPE[0]}x{TRANSPOSE_SHAPE[1]}"),
    Target("transpose", "transpose_kernel", ("transpose",), f"Act 1 transpose, 64x64 tiles through padded shared memory, {TRANSPOSE_SHAPE[0]}x{TRANSPOSE_SHAPE[1]}"),
    Target("reduction", "sum_kernel", ("reduction",), f"Act 1 reduction (float4, one wave, last block sums), 2^{REDUCTION_N.bit_length() - 1} floats"),
    *(Target(f"sgemm_{s}", f"sgemm_{s}_kernel", (f"sgemm_{s}",), f"Act 4 SGEMM step {i}: {s}, {SGEMM_N}^3") for i, s in enumerate(SGEMM_STEPS, 1)),
)
BY_NAME = {t.name: t for t in TARGETS}
LABELS = tuple(label for t in TARGETS for label in t.labels)


# --- the driver: what ncu runs ---------------------------------------------------------------------


def _book_kernels_source() -> str:
    """The CUDA source of Act 1's measuring notebook (its KERNELS cell), as the book runs it."""
    cells = json.loads((ROOT / "book" / "act1-hierarchy" / "measure-hierarchy.ipynb").read_text())["cells"]
    for cell in cells:
        found = re.search(r'KERNELS = r"""\n(.*?)"""', "".join(cell["source"]), re.S)
        if cell["cell_type"] == "code" and found:
            return found.group(1)
    raise LookupError("no KERNELS cell in book/act1-hierarchy/measure-hierarchy.ipynb")


def prepare(target: Target):
    """(warm_up or None, [one launch per label]) for the target, inputs made and code loaded."""
    import cupy as cp

    rng = cp.random.default_rng(0)
    if target.name == "strided_read":
        module = cp.RawModule(code=_book_kernels_source(), options=("-std=c++17",))
        fn = module.get_function("strided_read_kernel")  # compiled and loaded here, outside the window
        x = cp.ones(STRIDED_N * max(STRIDES), dtype=cp.float32)
        out = cp.empty(STRIDED_N, dtype=cp.float32)
        grid = ((STRIDED_N + 255) // 256,)

        def strided(stride):
            return lambda: fn(grid, (256,), (x, out, cp.int64(STRIDED_N), cp.int32(stride)))

        # No launch outside the window: the six results map to the strides by their order.
        return None, [strided(s) for s in STRIDES]
    if target.name in ("transpose_naive", "transpose", "reduction"):
        from tests.gpu.tune_act1 import solution_namespace

        if target.name == "reduction":
            fn = solution_namespace("reduction.ipynb")["reduce_sum"]
            x = rng.standard_normal(REDUCTION_N, dtype=cp.float32)
        else:
            fn = solution_namespace("transpose.ipynb")[target.name]
            x = rng.standard_normal(TRANSPOSE_SHAPE, dtype=cp.float32)
        return (lambda: fn(x)), [lambda: fn(x)]
    step = target.name.removeprefix("sgemm_")
    if step == "tf32":
        import torch

        from tests.gpu.tune_act4_warptile import load_triton_solution

        fn = load_triton_solution("act4-kernels/sgemm_tf32", "sgemm_tf32")["sgemm_tf32"]
        gen = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(SGEMM_N, SGEMM_N, device="cuda", generator=gen)
        b = torch.randn(SGEMM_N, SGEMM_N, device="cuda", generator=gen)
    else:
        from tests.gpu.tune_act4_sgemm import load_solution

        fn = load_solution(step)
        a = rng.standard_normal((SGEMM_N, SGEMM_N), dtype=cp.float32)
        b = rng.standard_normal((SGEMM_N, SGEMM_N), dtype=cp.float32)
    return (lambda: fn(a, b)), [lambda: fn(a, b)]


def drive(name: str) -> None:
    """Warm up outside the profiler's window, then launch once to be skipped and once per label."""
    import cupy as cp

    target = BY_NAME[name]
    warm_up, launches = prepare(target)
    if warm_up is not None:
        warm_up()
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.runtime.profilerStart()
    launches[0]()  # skipped: --launch-skip 1
    for launch in launches:  # profiled: --launch-count len(target.labels)
        launch()
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.runtime.profilerStop()
    print(f"{name}: {target.what}; {len(launches) + 1} launches of {target.kernel} in the profiler's window")


# --- ncu's CSV ----------------------------------------------------------------------------------


def number(text: str) -> float | int | str | None:
    """A value as ncu prints it: '1,234,567' and '12.5' are numbers, 'n/a' or '' is None."""
    text = text.strip()
    if text in ("", "n/a", "N/A"):
        return None
    plain = text.replace(",", "")
    try:
        value = float(plain)
    except ValueError:
        return text
    return int(value) if value.is_integer() and re.fullmatch(r"-?\d+", plain) else value


def parse_ncu_csv(text: str) -> list[dict]:
    """The profiled launches in ncu's CSV output, in the order ncu reports them.

    Lines that are not CSV (ncu's ==PROF== and ==WARNING== lines, the program's own output) are
    skipped. Both of ncu's CSV layouts are read: the details page (one row per metric: "ID", ...,
    "Kernel Name", ..., "Metric Name", "Metric Unit", "Metric Value") and the raw page (one row per
    launch, a column per metric, the units in the row under the header). Returns, per launch,
    {"id", "kernel", "block", "grid", "metrics": {name: {"value", "unit"}}}.
    """
    rows = list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))
    header_at = next((i for i, row in enumerate(rows) if row and row[0] == "ID"), None)
    if header_at is None:
        return []
    header, body = rows[header_at], [r for r in rows[header_at + 1 :] if len(r) > 1 and r[0] != "ID"]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[str, dict] = {}

    def launch(row):
        key = row[col["ID"]]
        return launches.setdefault(
            key,
            {
                "id": number(key),
                "kernel": row[col["Kernel Name"]] if "Kernel Name" in col else "",
                "block": row[col["Block Size"]] if "Block Size" in col else "",
                "grid": row[col["Grid Size"]] if "Grid Size" in col else "",
                "metrics": {},
            },
        )

    if "Metric Name" in col:
        for row in body:
            if row[col["Metric Name"]]:
                launch(row)["metrics"][row[col["Metric Name"]]] = {"value": number(row[col["Metric Value"]]), "unit": row[col["Metric Unit"]]}
        return list(launches.values())
    units = {}
    if body and body[0][col["ID"]] == "":
        units, body = dict(zip(header, body[0], strict=False)), body[1:]
    fixed = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"}
    for row in body:
        entry = launch(row)
        for name, value in zip(header, row, strict=False):
            if name not in fixed and "__" in name:
                entry["metrics"][name] = {"value": number(value), "unit": units.get(name, "")}
    return list(launches.values())


def diagnose(output: str, metrics: tuple[str, ...]) -> dict:
    """What went wrong in an ncu run, from its output: permissions, unknown metrics, replay."""
    errors = [line for line in output.splitlines() if "==ERROR==" in line or "ERR_" in line]
    text = "\n".join(errors)
    bad = [m for m in metrics if m in text or re.search(rf"\b{re.escape(m.split('.')[0])}\b", text)]
    return {
        "permission": "ERR_NVGPUCTRPERM" in output,
        "bad_metrics": bad,
        "replay": bool(re.search(r"replay", text, re.I)),
        "errors": errors[:10],
        "nothing_profiled": "No kernels were profiled" in output,
    }


# --- the orchestrator ---------------------------------------------------------------------------


def find_ncu(explicit: str | None) -> str | None:
    for candidate in (explicit, shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and (shutil.which(candidate) or Path(candidate).is_file()):
            return candidate
    return None


def ncu_command(target: Target, metrics, *, ncu: str = "ncu", log: str | Path = "LOG.csv", replay: str | None = None, clocks: str = "base") -> list[str]:
    command = [
        ncu,
        "--target-processes", "all",
        "--profile-from-start", "off",
        "--kernel-name", f"regex:^{target.kernel}$",
        "--launch-skip", "1",
        "--launch-count", str(len(target.labels)),
        "--cache-control", "all",
        "--clock-control", clocks,
        "--metrics", ",".join(metrics),
        "--csv", "--page", "details", "--print-units", "base",
        "--log-file", str(log),
    ]  # fmt: skip
    if replay:
        command[1:1] = ["--replay-mode", replay]
    return [*command, sys.executable, str(Path(__file__).resolve()), "--kernel", target.name]


def run_target(target: Target, metrics: list[str], ncu: str, raw: Path, clocks: str, timeout_s: float, replay: str | None = None):
    """Runs ncu over one target. Returns (output text, CSV text, exit code or None on timeout)."""
    log = raw / f"{target.name}{'.' + replay if replay else ''}.csv"
    command = ncu_command(target, metrics, ncu=ncu, log=log, replay=replay, clocks=clocks)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # ncu and the driver it started, nothing else
        output, _ = proc.communicate()
        code = None
    (raw / f"{log.stem}.out").write_text(f"$ {shlex.join(command)}\n{output}")
    return output, (log.read_text() if log.exists() else ""), code


def value(entry: dict, metric: str):
    got = entry.get(metric, {}).get("value")
    return got if isinstance(got, int | float) else None


def summary_table(counters: dict, failed: dict) -> str:
    """One line per kernel, in physical units: microseconds, megabytes (10^6 bytes), percent."""
    columns = (
        ("time us", lambda e: _div(value(e, "gpu__time_duration.sum"), 1e3), "{:.1f}"),
        ("DRAM rd MB", lambda e: _div(value(e, "dram__bytes_read.sum"), 1e6), "{:.1f}"),
        ("DRAM wr MB", lambda e: _div(value(e, "dram__bytes_write.sum"), 1e6), "{:.1f}"),
        ("L2 rd MB", lambda e: _div(value(e, "lts__t_sectors_srcunit_tex_op_read.sum"), 1e6 / SECTOR_BYTES), "{:.1f}"),
        ("sect/req", lambda e: _div(value(e, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), value(e, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")), "{:.2f}"),
        ("smem ld wf M", lambda e: _div(value(e, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), 1e6), "{:.1f}"),
        ("ld conf %", lambda e: _pct(value(e, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), value(e, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")), "{:.1f}"),
        ("st conf %", lambda e: _pct(value(e, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"), value(e, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")), "{:.1f}"),
        ("occ %", lambda e: value(e, "sm__warps_active.avg.pct_of_peak_sustained_active"), "{:.1f}"),
        ("regs", lambda e: value(e, "launch__registers_per_thread"), "{:.0f}"),
        ("inst M", lambda e: _div(value(e, "smsp__inst_executed.sum"), 1e6), "{:.1f}"),
        ("lds M", lambda e: _div(value(e, "smsp__sass_inst_executed_op_shared_ld.sum"), 1e6), "{:.2f}"),
        ("ldg M", lambda e: _div(value(e, "smsp__sass_inst_executed_op_global_ld.sum"), 1e6), "{:.2f}"),
        ("FMA %", lambda e: value(e, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"), "{:.1f}"),
        ("issue %", lambda e: value(e, "smsp__issue_active.avg.pct_of_peak_sustained_active"), "{:.1f}"),
    )
    width = max(len(label) for label in LABELS)
    lines = [f"{'kernel':<{width}} " + " ".join(f"{name:>{max(len(name), 7)}}" for name, _, _ in columns)]
    for label in LABELS:
        if label in counters:
            cells = []
            for name, get, fmt in columns:
                got = get(counters[label])
                cells.append(f"{fmt.format(got) if got is not None else '-':>{max(len(name), 7)}}")
            lines.append(f"{label:<{width}} " + " ".join(cells))
        elif label in failed:
            lines.append(f"{label:<{width}} not profiled: {failed[label]}")
    lines.append(
        "L2 rd MB: sectors L1 asked of L2 x 32 bytes; sect/req: L1 sectors per global load request; "
        "ld/st conf %: bank conflicts per shared wavefront; occ %: achieved occupancy; "
        "inst/lds/ldg M: warp instructions executed (all, shared loads, global loads), millions"
    )
    return "\n".join(lines)


def _div(a, b):
    return a / b if a is not None and b else None


def _pct(a, b):
    return 100.0 * a / b if a is not None and b else (0.0 if a == 0 else None)


def write_outputs(out: Path, raw: Path, archive: Path, counters: dict, run: dict, failed: dict) -> str:
    out.mkdir(parents=True, exist_ok=True)
    (out / "counters.json").write_text(json.dumps(counters, indent=1) + "\n")
    with (out / "counters.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["kernel", "metric", "value", "unit"])
        for label, metrics in counters.items():
            for metric, entry in metrics.items():
                writer.writerow([label, metric, entry["value"], entry["unit"]])
    table = summary_table(counters, failed)
    (out / "summary.txt").write_text(table + "\n")
    (out / "run.json").write_text(json.dumps({**run, "failed": failed}, indent=1) + "\n")
    partial = archive.with_name(archive.name + ".tmp")
    with tarfile.open(partial, "w:gz") as tar:
        for name in ("counters.json", "counters.csv", "summary.txt", "run.json"):
            tar.add(out / name, arcname=f"ncu/{name}")
        tar.add(raw, arcname="ncu/raw")
    partial.replace(archive)
    return table


def orchestrate(args) -> int:
    targets = [BY_NAME[n] for n in args.only.split(",")] if args.only else list(TARGETS)
    if args.dry_run:
        for target in targets:
            print(f"# {target.name}: {target.what} -> {', '.join(target.labels)}")
            print(shlex.join(ncu_command(target, METRICS, ncu=args.ncu or "ncu", log=f"$GPU_OUT/ncu/raw/{target.name}.csv", clocks=args.clocks)))
        return 0
    ncu = find_ncu(args.ncu)
    if ncu is None:
        print("Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin: nothing profiled.")
        return 2
    started = time.perf_counter()
    gpu_out = Path(os.environ.get("GPU_OUT", ROOT / "_build"))
    out, archive = gpu_out / "ncu", gpu_out / "ncu.tar.gz"
    raw = Path(tempfile.mkdtemp(prefix="ncu-raw-"))
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    metrics = list(METRICS)
    counters: dict = {}
    failed: dict = {}
    run = {
        "ncu": version[-1] if version else "",
        "sizes": {"sgemm": [SGEMM_N] * 3, "transpose": list(TRANSPOSE_SHAPE), "reduction": REDUCTION_N, "strided_read": {"n": STRIDED_N, "strides": list(STRIDES)}},
        "clock_control": args.clocks,
        "targets": {},
        "launches": {},
        "dropped_metrics": [],
    }
    print(f"{run['ncu']}; {len(targets)} profiled processes, {sum(len(t.labels) for t in targets)} kernels; out: {out}")
    stop = ""
    for target in targets:
        elapsed = time.perf_counter() - started
        if stop or elapsed > args.budget_s:
            for label in target.labels:
                failed[label] = stop or f"skipped: past the {args.budget_s:.0f} s budget"
            continue
        t0 = time.perf_counter()
        replay = None
        note = ""
        for _attempt in range(3):
            output, csv_text, code = run_target(target, metrics, ncu, raw, args.clocks, args.timeout_s, replay)
            launches = parse_ncu_csv(csv_text) or parse_ncu_csv(output)
            found = diagnose(output + "\n" + csv_text, tuple(metrics))
            if found["permission"]:
                stop = "ncu may not read the performance counters (ERR_NVGPUCTRPERM): run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0"
                print(f"!! {stop}")
                break
            # A handful of names rejected: drop them. Most of the list named: a failure of another kind.
            if found["bad_metrics"] and not launches and len(found["bad_metrics"]) <= len(metrics) // 2:
                for m in found["bad_metrics"]:
                    metrics.remove(m)
                run["dropped_metrics"] += found["bad_metrics"]
                print(f"!! {target.name}: this ncu rejects {', '.join(found['bad_metrics'])}: dropped for the rest of the run, retrying")
                continue
            if not launches and found["replay"] and replay is None:
                replay = "application"
                note = "kernel replay failed; profiled with --replay-mode application"
                print(f"!! {target.name}: {note}")
                continue
            break
        seconds = time.perf_counter() - t0
        run["targets"][target.name] = {
            "command": shlex.join(ncu_command(target, metrics, ncu=ncu, log=f"raw/{target.name}.csv", replay=replay, clocks=args.clocks)),
            "seconds": round(seconds, 1),
            "exit": code,
            "note": note,
            "errors": found["errors"],
        }
        if stop:
            for label in target.labels:
                failed[label] = stop
            continue
        reason = ""
        if code is None:
            reason = f"ncu ran past {args.timeout_s:.0f} s and was stopped"
        elif len(launches) != len(target.labels):
            reason = f"ncu returned {len(launches)} profiled launches for {len(target.labels)} expected (exit {code}"
            reason += f"; {found['errors'][0]})" if found["errors"] else ("; no kernel was profiled)" if found["nothing_profiled"] else ")")
            last = [line for line in output.splitlines() if line.strip() and not line.startswith("==")]
            if last and code:  # the driver's own last words, a Python exception most often
                reason += f"; the program said: {last[-1].strip()[:200]}"
        elif any(target.kernel not in entry["kernel"] for entry in launches):
            reason = f"ncu profiled {sorted({e['kernel'] for e in launches})}, not {target.kernel}"
        if reason:
            for label in target.labels:
                failed[label] = reason
            print(f"!! {target.name}: {reason} ({seconds:.0f} s)")
        else:
            for label, entry in zip(target.labels, launches, strict=True):
                counters[label] = entry["metrics"]
                run["launches"][label] = {"kernel": entry["kernel"], "grid": entry["grid"], "block": entry["block"]}
            print(f"   {target.name}: {len(launches)} launch(es) profiled in {seconds:.0f} s")
        run["elapsed_s"] = round(time.perf_counter() - started, 1)
        write_outputs(out, raw, archive, counters, run, failed)
    run["elapsed_s"] = round(time.perf_counter() - started, 1)
    table = write_outputs(out, raw, archive, counters, run, failed)
    print("\n" + table)
    print(f"\n{len(counters)} of {sum(len(t.labels) for t in targets)} kernels profiled in {run['elapsed_s']:.0f} s; wrote {out}/ and {archive}")
    return 0 if counters and not failed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", choices=sorted(BY_NAME), help="the driver: run this kernel as ncu profiles it (warm-up, skipped launch, profiled launch)")
    parser.add_argument("--dry-run", action="store_true", help="print the ncu command of every kernel and exit")
    parser.add_argument("--only", help="comma-separated subset of: " + ", ".join(BY_NAME))
    parser.add_argument("--ncu", help="path of the ncu executable (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    parser.add_argument("--clocks", choices=("base", "none"), default="base", help="ncu --clock-control (default base: locked base clocks)")
    parser.add_argument("--budget-s", type=float, default=140.0, help="start no kernel after this many seconds (default 140)")
    parser.add_argument("--timeout-s", type=float, default=90.0, help="stop one kernel's ncu after this many seconds (default 90)")
    args = parser.parse_args(argv)
    if args.only and (unknown := [n for n in args.only.split(",") if n not in BY_NAME]):
        parser.error(f"unknown kernel(s) {unknown}; choose from {', '.join(BY_NAME)}")
    if args.kernel:
        drive(args.kernel)
        return 0
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
