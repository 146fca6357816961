"""Reading a profile (Act 3): the rule that turns a Chrome trace (what torch.profiler's export_chrome_trace
writes, what Perfetto opens) into the top kernels, the GPU idle share and the regime of one step.

Act 3's exercises use it twice: exactly, on traces drawn from a seed (autograder.problems.act3.profiling
makes them; any machine grades them), and against the grader's own profile of a workload on this GPU
(``profile_step`` here, run by the judge once the learner's process is gone).
"""

from __future__ import annotations

import json
import os
import re
import tempfile

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
STEP_NAME = "step"
# cuBLAS, cuBLASLt and CUTLASS name their matrix-multiply kernels with one of these words; on Hopper
# with CUDA 13, cuBLASLt's own kernels are nvjet_* (seen on an H100: nvjet_sm90_tst_256x128_...).
MATMUL_KERNEL = re.compile(r"gemm|matmul|cutlass|nvjet", re.IGNORECASE)
# Profiled calls recorded and thrown away before the one that is kept: torch's documentation warns
# that the start of profiling carries a high overhead that skews what it records. On an H100 the
# first recorded call of a warm training step showed the GPU idle 89% of a 23.6 ms step whose kernels
# took 2.5 ms (book/act3-profiling/regimes-trace.ipynb before it warmed the profiler up).
PROFILER_WARMUP = 2
# More than half of the step's span with no kernel running: the GPU waits for the CPU.
IDLE_OVERHEAD = 0.5
MATMUL_COMPUTE = 0.5


def step_window(events: list) -> tuple[float, float]:
    """The CPU's "step" range (category user_annotation: the GPU timeline's copy of it is a
    gpu_user_annotation); its end is pushed out to the last device event that started inside it."""
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e.get("name") == STEP_NAME]
    if not steps:
        raise ValueError(f"the trace has no CPU range named {STEP_NAME!r}: wrap the step in torch.profiler.record_function({STEP_NAME!r})")
    step = min(steps, key=lambda e: e["ts"])
    start, end = step["ts"], step["ts"] + step["dur"]
    for e in device_events(events, start):
        end = max(end, e["ts"] + e["dur"])
    return start, end


def device_events(events: list, start: float) -> list:
    """Kernels, copies and memsets that began at or after ``start`` (a warm-up before the step is not the step)."""
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES and e["ts"] >= start]


def busy_time(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of intervals: two kernels overlapping on two streams keep the GPU busy once."""
    total, reach = 0.0, float("-inf")
    for begin, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(begin, reach)
        reach = end
    return total


def summarize_trace(trace: dict, top: int) -> dict:
    """The step of a Chrome trace in three facts.

    top_kernels: the ``top`` kernel names (category "kernel") with the most total time in the step,
    as [name, microseconds] pairs, most first (ties by name). idle_share: the share of the step's
    span (from the CPU's "step" range start to the end of its last device event) during which no
    kernel, copy or memset ran. regime: "overhead" when idle_share >= 0.5; otherwise "compute" when
    matrix-multiply kernels (gemm, matmul, cutlass or nvjet in the name) take at least half the
    kernel time, else "memory".
    """
    events = trace["traceEvents"]
    start, end = step_window(events)
    on_device = device_events(events, start)
    kernels = [e for e in on_device if e["cat"] == "kernel"]
    totals: dict[str, float] = {}
    for e in kernels:
        totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:top]
    span = end - start
    idle = 1.0 - busy_time([(e["ts"], e["ts"] + e["dur"]) for e in on_device]) / span if span > 0 else 1.0
    kernel_time = sum(totals.values())
    matmul_time = sum(t for name, t in totals.items() if MATMUL_KERNEL.search(name))
    if idle >= IDLE_OVERHEAD or kernel_time == 0:
        regime = "overhead"
    else:
        regime = "compute" if matmul_time >= MATMUL_COMPUTE * kernel_time else "memory"
    return {"top_kernels": [[name, total] for name, total in ranked], "idle_share": idle, "regime": regime}


def regimes_within(summary: dict, idle_margin: float, share_margin: float) -> set[str]:
    """The regimes a second profile of the same step may name: the rule's own, and the one across a
    threshold that this profile is within a margin of (two runs of one step differ by that much)."""
    idle, share = summary["idle_share"], summary["matmul_share"]
    busy = "compute" if share >= MATMUL_COMPUTE else "memory"
    regimes = {summary["regime"]}
    if abs(idle - IDLE_OVERHEAD) <= idle_margin:
        regimes |= {"overhead", busy}
    if idle < IDLE_OVERHEAD + idle_margin and abs(share - MATMUL_COMPUTE) <= share_margin:
        regimes |= {"compute", "memory"}
    return regimes


def profile_step(step, top: int) -> dict:
    """The grader's own profile of ``step`` on this GPU: one warm-up call, then PROFILER_WARMUP
    profiled calls thrown away and one kept, each inside a "step" range and synchronised,
    summarised by the same rule."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    step()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        recording = schedule(wait=0, warmup=PROFILER_WARMUP, active=1, repeat=1)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=recording, on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
            for _ in range(PROFILER_WARMUP + 1):
                with record_function(STEP_NAME):
                    step()
                torch.cuda.synchronize()
                prof.step()
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    summary = summarize_trace(trace, top=len(trace["traceEvents"]))
    summary["all_kernels"] = dict(summary.pop("top_kernels"))
    kernel_time = sum(summary["all_kernels"].values())
    matmul_time = sum(t for name, t in summary["all_kernels"].items() if MATMUL_KERNEL.search(name))
    summary["matmul_share"] = matmul_time / kernel_time if kernel_time else 0.0
    return summary
