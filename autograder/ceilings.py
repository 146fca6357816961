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

CACHE_VERSION = 2


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


def _warm_median_ms(call, repeats: int) -> float:
    """The median time of ``call`` after three untimed calls (compilation, allocation, clocks)."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    return statistics.median(_time_ms(call, repeats))


def _large_buffer() -> torch.Tensor:
    """float32 values far beyond any L2: 1 GiB, or an eighth of the free memory if that is less, in
    whole rows of 2^16 (the read-only rate also sums it row by row)."""
    free, _ = torch.cuda.mem_get_info()
    return torch.randn((min(1 << 30, free // 8) // 4) >> 16 << 16, device="cuda")


def measure_copy_bandwidth() -> dict:
    """Device-to-device copy of a buffer far larger than L2; bytes counted as read plus written."""
    src = _large_buffer()
    dst = torch.empty_like(src)
    ms = _warm_median_ms(lambda: dst.copy_(src), 30)
    moved = 2 * src.numel() * src.element_size()
    return {"bytes_per_s": moved / (ms * 1e-3), "buffer_bytes": src.numel() * src.element_size(), "median_ms": ms}


def measure_streams() -> dict:
    """The same buffer read only and written only (a fill), for what a copy's even mix of reads and
    writes does not say: kernels that mostly read (vector add reads two streams for one written, a
    softmax-weighted sum reads two and writes a column) are not capped at the copy's figure. The read
    rate is the fastest of three reductions (a full sum, a maximum, row sums), each a stream of loads
    and a few stores: on an H200 the full sum read 98% of the copy's rate where Act 1's reduction
    read 107%, so one reduction alone says more about its own kernel than about the memory. Not a
    grading ceiling: ``doctor`` prints them beside the copy."""
    buffer = _large_buffer()
    total = torch.empty((), device="cuda")
    rows = buffer.view(-1, 1 << 16)
    row_sums = torch.empty(rows.shape[0], device="cuda")
    # A full reduction takes out= only with dim given.
    readers = (lambda: torch.sum(buffer, dim=0, out=total), lambda: torch.amax(buffer, dim=0, out=total), lambda: torch.sum(rows, dim=1, out=row_sums))
    read_ms = min(_warm_median_ms(reader, 30) for reader in readers)
    write_ms = _warm_median_ms(lambda: buffer.fill_(1.0), 30)
    size = buffer.numel() * buffer.element_size()
    return {name: {"bytes_per_s": size / (ms * 1e-3), "median_ms": ms} for name, ms in (("read", read_ms), ("write", write_ms))}


def measure_matmul(dtype: torch.dtype, n: int, tf32: bool = False) -> dict:
    """cuBLAS on n x n x n, the rate a well-tuned dense kernel of this dtype can reach on this GPU."""
    a = torch.randn(n, n, device="cuda").to(dtype)
    b = torch.randn(n, n, device="cuda").to(dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        ms = _warm_median_ms(lambda: a @ b, 10)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return {"flop_per_s": 2.0 * n**3 / (ms * 1e-3), "n": n, "median_ms": ms}


def measure_fp8_matmul(n: int) -> dict:
    """fp8 e4m3 through torch._scaled_mm (Hopper and Ada tensor cores); bf16 output, unit scales."""
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    # _scaled_mm wants the second operand column-major.
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t().contiguous().t()
    one = torch.ones((), device="cuda")

    def call():
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    ms = _warm_median_ms(call, 10)
    return {"flop_per_s": 2.0 * n**3 / (ms * 1e-3), "n": n, "median_ms": ms}


def measure() -> dict:
    """Copy bandwidth, then the matmul rate per dtype this GPU runs on tensor cores (fp8 where the
    chip has it). Sizes fill the chip: 4096 for fp32 and TF32, 8192 for 16-bit and 8-bit types."""
    props = torch.cuda.get_device_properties(0)
    started = time.time()
    result = {
        "version": CACHE_VERSION,
        "device": props.name,
        "key": device_key(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "copy": measure_copy_bandwidth(),
        "streams": measure_streams(),
        "matmul": {},
    }
    matmul = result["matmul"]
    # Each dtype this GPU runs as itself (a T4 has no TF32 or bf16 tensor cores: those are left out).
    for dtype in ("float32", "tf32", "bfloat16", "float16"):
        if _runnable(dtype, props) == dtype:
            matmul[dtype] = _measure_matmul_of(dtype, props)
    if (props.major, props.minor) >= (8, 9) and hasattr(torch, "float8_e4m3fn"):
        try:
            matmul["float8_e4m3fn"] = measure_fp8_matmul(8192)
        except (RuntimeError, TypeError) as exc:
            result["fp8_unavailable"] = f"{type(exc).__name__}: {str(exc)[:200]}"
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


# A dtype with no ceiling of its own is capped by the nearest one measured (bf16 and fp16 tensor
# cores run at the same rate; a GPU without bf16 falls back to its fp16 rate).
_FALLBACK = {"bfloat16": "float16", "float16": "bfloat16", "tf32": "float32", "float8_e4m3fn": "bfloat16"}


def compute_peak(entry: dict, dtype: str = "float32") -> float:
    matmul = entry["matmul"]
    for name in (dtype, _FALLBACK.get(dtype), "float32"):
        if name in matmul:
            return float(matmul[name]["flop_per_s"])
    return float(next(iter(matmul.values()))["flop_per_s"])


def measure_for(compute_dtype: str, *more_dtypes: str) -> dict:
    """The ceilings one grading needs, measured by the judge in that grading: the copy bandwidth and
    the matmul rate of ``compute_dtype`` (the physical floor and the roofline use nothing else), and
    of ``more_dtypes`` for a problem whose operations are held against several (Act 2's measured
    points: a float32 and a bfloat16 matmul). The cache that ``doctor`` fills is never read for a
    grade: it lies where the learner can write."""
    props = torch.cuda.get_device_properties(0)
    entry = {"version": CACHE_VERSION, "device": props.name, "key": device_key(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "copy": measure_copy_bandwidth(), "matmul": {}}
    for wanted in dict.fromkeys((compute_dtype, *more_dtypes)):
        dtype = _runnable(wanted, props)
        if dtype not in entry["matmul"]:
            entry["matmul"][dtype] = _measure_matmul_of(dtype, props)
    # Give the buffers back: the workers need the memory more than the judge's allocator does.
    torch.cuda.empty_cache()
    return entry


def _runnable(compute_dtype: str, props) -> str:
    """The dtype whose matmul rate stands for ``compute_dtype`` on this GPU (its nearest one that runs)."""
    dtype = compute_dtype if compute_dtype in ("float32", "tf32", "bfloat16", "float16", "float8_e4m3fn") else "float32"
    if dtype == "float8_e4m3fn" and (props.major, props.minor) < (8, 9):
        dtype = "float16"
    if dtype in ("bfloat16", "tf32") and props.major < 8:
        dtype = "float16" if dtype == "bfloat16" else "float32"
    return dtype


def _measure_matmul_of(dtype: str, props) -> dict:
    if dtype == "float8_e4m3fn":
        return measure_fp8_matmul(8192)
    if dtype == "tf32":
        return measure_matmul(torch.float32, 4096, tf32=True)
    if dtype == "float32":
        return measure_matmul(torch.float32, 4096)
    return measure_matmul(getattr(torch, dtype), 8192 if props.major >= 8 else 4096)
