"""Profiler traces of a decode step, in the form exercise 8.1 hands out: Chrome-trace events (``name``,
``cat``, ``ph``, ``ts`` and, for complete events, ``dur``, in microseconds) with times rebased to the
trace's start and put on a grid of 1/1024 us, so that sums and differences of them are exact in floating
point. ``synthetic_trace`` draws one shaped like an eager decode step from a seed; ``trace_events``
profiles a call with torch.profiler (autograder.megakernels.profile_decode_step: the eager decode step)."""

from __future__ import annotations

import json
import os
import random
import tempfile

# What the GPU executes: kernels, copies and memsets. cuda_runtime (cudaLaunchKernel, ...) and cpu_op
# events are the host's side and are not GPU work.
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
TICKS_PER_US = 1024


def tick(us: float) -> float:
    return round(us * TICKS_PER_US) / TICKS_PER_US


def event(name: str, cat: str, ts: float, dur: float) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "ts": tick(ts), "dur": tick(dur)}


KERNELS = ("vectorized_elementwise_kernel", "reduce_kernel", "gemv2T_kernel_val", "elementwise_kernel", "index_elementwise_kernel",
           "cunn_SoftMaxForward", "CatArrayBatchedCopy", "gemmSN_TN_kernel")


def synthetic_trace(seed: int, kernels: int | None = None, streams: int = 1) -> list:
    """A decode step's trace as the profiler writes it: for every kernel a cudaLaunchKernel on the
    host and the kernel on the GPU some microseconds later, bubbles of a few microseconds between
    dependent kernels, a few long matrix-vector products, cpu_op events around them, flow and
    instant events, and (with ``streams`` > 1) copies on another stream that overlap the kernels."""
    r = random.Random(seed)
    count = kernels if kernels is not None else r.randrange(20, 400)
    events, host, gpu = [], 0.0, r.uniform(5, 40)
    for i in range(count):
        name = r.choice(KERNELS)
        host += r.uniform(3.0, 9.0)
        events.append(event(f"aten::{name.split('_')[0]}", "cpu_op", host - 2.0, r.uniform(2.5, 8.0)))
        events.append(event("cudaLaunchKernel", "cuda_runtime", host, r.uniform(1.5, 4.0)))
        events.append({"name": "ac2g", "cat": "ac2g", "ph": "s", "ts": tick(host), "id": i})
        # A kernel starts once it is launched and the previous one has drained: either may be later.
        gpu = max(gpu + r.choice((0.0, r.uniform(0.3, 2.0), r.uniform(1.0, 6.0))), host + r.uniform(2.0, 6.0) if r.random() < 0.3 else 0.0)
        duration = r.uniform(15.0, 120.0) if name.startswith("gemv") else r.uniform(1.0, 5.0)
        events.append(event(name, "kernel", gpu, duration))
        if streams > 1 and r.random() < 0.08:
            # A copy on a second stream, overlapping this kernel and maybe the next.
            events.append(event("Memcpy DtoD (Device -> Device)", "gpu_memcpy", gpu + r.uniform(0, duration), r.uniform(1.0, 12.0)))
        if r.random() < 0.03:
            events.append(event("Memset (Device)", "gpu_memset", gpu + duration + r.uniform(0.5, 2.0), 1.0))
            gpu += 3.0
        gpu += duration
    events.append({"name": "Iteration Start: PyTorch Profiler", "cat": "user_annotation", "ph": "i", "ts": 0.0, "s": "g"})
    r.shuffle(events)
    return events


KEPT_CATEGORIES = (*GPU_CATEGORIES, "cuda_runtime", "cuda_driver", "cpu_op")


def trace_events(step, device: str = "cuda", warmup: int = 3) -> list:
    """Profile one call of ``step()`` with torch.profiler (host and GPU) and return its events in the
    form the exercise hands out: complete events of the kept categories, times rebased to the first
    event and put on the 1/1024 us grid, sorted by start."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    if device == "cuda":
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        step()
        if device == "cuda":
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    kept = [e for e in raw.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in KEPT_CATEGORIES and "dur" in e]
    if not kept:
        return []
    origin = min(float(e["ts"]) for e in kept)
    events = [event(str(e["name"]), e["cat"], float(e["ts"]) - origin, float(e["dur"])) for e in kept]
    return sorted(events, key=lambda e: e["ts"])
