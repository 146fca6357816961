"""This GPU's ceilings, measured once and cached: the copy bandwidth every memory-bound speed grade
is a fraction of, and the matrix-multiply rates that cap compute-bound kernels on the roofline.

Datasheet numbers are not used: a kernel is judged against what this very chip, driver and library
reached in a measurement, so a T4 in Colab and an H200 are graded on the same scale.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import torch

CACHE_VERSION = 1


def cache_dir() -> Path:
    root = os.environ.get("AUTOGRADER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpu-brrr")
    return Path(root)


def device_key() -> str:
    props = torch.cuda.get_device_properties(0)
    return f"{props.name}|sm{props.major}{props.minor}|{props.multi_processor_count}SM|torch{torch.__version__}"


def _time_ms(fn, repeats: int) -> list[float]:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def measure_copy_bandwidth() -> dict:
    """Device-to-device copy of a buffer far larger than L2; bytes counted as read plus written."""
    free, _ = torch.cuda.mem_get_info()
    nbytes = min(1 << 30, free // 8)
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    ms = statistics.median(_time_ms(lambda: dst.copy_(src), 30))
    moved = 2 * src.numel() * src.element_size()
    return {"bytes_per_s": moved / (ms * 1e-3), "buffer_bytes": src.numel() * src.element_size(), "median_ms": ms}


def measure_matmul(dtype: torch.dtype, n: int) -> dict:
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    ms = statistics.median(_time_ms(lambda: a @ b, 10))
    return {"flop_per_s": 2.0 * n**3 / (ms * 1e-3), "n": n, "median_ms": ms}


def measure() -> dict:
    props = torch.cuda.get_device_properties(0)
    started = time.time()
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        result = {
            "version": CACHE_VERSION,
            "device": props.name,
            "key": device_key(),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "copy": measure_copy_bandwidth(),
            "matmul": {"float32": measure_matmul(torch.float32, 4096)},
        }
        half = torch.bfloat16 if props.major >= 8 else torch.float16
        result["matmul"][str(half).removeprefix("torch.")] = measure_matmul(half, 8192 if props.major >= 8 else 4096)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32
    result["seconds"] = time.time() - started
    return result


def load(remeasure: bool = False) -> dict:
    """The cached ceilings of this GPU, measuring them first if there are none (or if asked to)."""
    path = cache_dir() / "ceilings.json"
    key = device_key()
    cached = {}
    if path.exists():
        try:
            cached = json.loads(path.read_text())
        except (OSError, ValueError):
            cached = {}
    entry = cached.get(key)
    if remeasure or not entry or entry.get("version") != CACHE_VERSION:
        entry = measure()
        cached[key] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cached, indent=2))
        tmp.replace(path)
    return entry


def copy_bandwidth(entry: dict) -> float:
    return float(entry["copy"]["bytes_per_s"])


def compute_peak(entry: dict, dtype: str = "float32") -> float:
    return float(entry["matmul"][dtype]["flop_per_s"])
