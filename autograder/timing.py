"""Speed on the GPU, measured so that the number means what it says.

Every timed call: fresh input values written into the same buffers (a cache keyed on pointers or
ids returns stale answers and fails the check), persisting L2 reset and L2 flushed (no call gets its
inputs from cache), CUDA events around one call with the whole device synchronised before the last
end event (work hidden on a side stream is still inside the timer), and the output checked
against the library's answer for those inputs (deferred or skipped work fails). The library runs
under the same protocol in the same loop, alternating with the learner's kernel.
"""

from __future__ import annotations

import ctypes
import glob
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from . import arrays, ceilings, checking

MIN_CALLS = 10
MAX_CALLS = 50
TIMED_SECONDS = 0.2
# A claimed time under this fraction of the physical floor is rejected as impossible: the floor
# uses the measured copy bandwidth, which a read-heavy kernel can exceed by a few percent only.
FLOOR_SLACK = 0.8
# GPU work queued ahead of each timed call, so that launching it from Python stays off the clock.
HEAD_START_US = 200.0

# Captured when the grader is imported, before any learner code runs: patching the class attribute
# afterwards changes nothing the grader calls.
_ELAPSED = torch.cuda.Event.elapsed_time
_RECORD = torch.cuda.Event.record
_EVENT_SYNC = torch.cuda.Event.synchronize
_DEVICE_SYNC = torch.cuda.synchronize
_SLEEP = getattr(torch.cuda, "_sleep", None)
_ZERO = torch.Tensor.zero_
# At most about 2 ms of spin at any clock a GPU runs at, whatever the calibration says.
MAX_HEAD_START_CYCLES = 4_000_000


@dataclass
class Timing:
    median_ms: float
    stderr_ms: float
    calls: int

    @classmethod
    def of(cls, samples: list[float]) -> Timing:
        median = statistics.median(samples)
        # The spread from the interquartile range (IQR / 1.349 is sigma for normal noise), so that a
        # few calls charged conservatively do not swamp it; the standard error of a median is about
        # 1.25 times that of a mean.
        if len(samples) >= 4:
            q = statistics.quantiles(samples, n=4)
            spread = (q[2] - q[0]) / 1.349
        else:
            spread = statistics.stdev(samples) if len(samples) > 1 else 0.0
        return cls(median, 1.2533 * spread / math.sqrt(len(samples)), len(samples))


@dataclass
class SpeedResult:
    size: Any
    candidate: Timing
    library: Timing
    bytes_moved: float
    flops: float
    floor_ms: float
    wrong_timed_outputs: int
    extra_libraries: dict = field(default_factory=dict)

    @property
    def bandwidth(self) -> float:
        return self.bytes_moved / (self.candidate.median_ms * 1e-3)

    @property
    def library_bandwidth(self) -> float:
        return self.bytes_moved / (self.library.median_ms * 1e-3)

    @property
    def ratio(self) -> float:
        return self.library.median_ms / self.candidate.median_ms

    def to_dict(self) -> dict:
        d = asdict(self)
        d["size"] = self.size if isinstance(self.size, (int, float, str)) else repr(self.size)
        d.update(bandwidth=self.bandwidth, library_bandwidth=self.library_bandwidth, ratio=self.ratio)
        return d


class _PersistingL2:
    """cudaCtxResetPersistingL2Cache and a zero persisting carve-out, so that an access-policy
    window set by the learner cannot keep inputs in L2 across the flush."""

    def __init__(self) -> None:
        self._reset = None
        self._set_limit = None
        for path in self._candidates():
            try:
                lib = ctypes.CDLL(path)
                self._reset = lib.cudaCtxResetPersistingL2Cache
                self._set_limit = lib.cudaDeviceSetLimit
                self._set_limit.argtypes = [ctypes.c_int, ctypes.c_size_t]
                break
            except (OSError, AttributeError):
                continue

    @staticmethod
    def _candidates() -> list[str]:
        found = ["libcudart.so"]
        torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
        site = os.path.dirname(os.path.dirname(torch.__file__))
        for pattern in (
            os.path.join(torch_lib, "libcudart*.so*"),
            os.path.join(site, "nvidia", "cuda_runtime", "lib", "libcudart.so*"),
            os.path.join(site, "nvidia", "cu*", "lib", "libcudart.so*"),
        ):
            found.extend(sorted(glob.glob(pattern)))
        return found

    @property
    def available(self) -> bool:
        return self._reset is not None

    def reset(self) -> None:
        if self._reset is not None:
            cuda_limit_persisting_l2_cache_size = 0x06
            self._set_limit(cuda_limit_persisting_l2_cache_size, 0)
            self._reset()


class Timer:
    """One call per event pair, L2 flushed first, the GPU kept busy for HEAD_START_US while the host
    launches the call. Two end events: one on the caller's stream right
    after the call, one after a device-wide synchronisation. The time reported is the larger of the
    stream time and the synchronised time less the synchronisation's own cost (measured here on an
    empty call), so work hidden on other streams is counted and honest kernels do not pay the
    host's wake-up latency."""

    def __init__(self) -> None:
        props = torch.cuda.get_device_properties(0)
        l2_bytes = getattr(props, "L2_cache_size", 0) or (50 << 20)
        # Writing twice the L2's size evicts everything a previous call left there. It also keeps the
        # GPU busy while the host launches the timed call, so launch latency stays out of the time.
        self._flush = torch.empty(max(2 * l2_bytes, 64 << 20) // 4, dtype=torch.float32, device="cuda")
        self._start = torch.cuda.Event(enable_timing=True)
        self._end_stream = torch.cuda.Event(enable_timing=True)
        self._end_device = torch.cuda.Event(enable_timing=True)
        self.persisting_l2 = _PersistingL2()
        self._head_start_cycles = self._calibrate_head_start()
        self.sync_overhead_ms = 0.0
        overheads = [self._raw(lambda: None)[1] for _ in range(30)]
        self.sync_overhead_ms = statistics.median(overheads)

    @staticmethod
    def _calibrate_head_start() -> int:
        """Clock cycles of a GPU spin that lasts about HEAD_START_US."""
        if _SLEEP is None:
            return 0
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        probe_cycles = 1_000_000
        _SLEEP(probe_cycles)
        _RECORD(start)
        _SLEEP(probe_cycles)
        _RECORD(end)
        _EVENT_SYNC(end)
        cycles_per_us = probe_cycles / max(_ELAPSED(start, end) * 1e3, 1e-3)
        return min(int(HEAD_START_US * cycles_per_us), MAX_HEAD_START_CYCLES)

    def _raw(self, call: Callable[[], Any]) -> tuple[float, float, Any, float]:
        self.persisting_l2.reset()
        _ZERO(self._flush)
        if self._head_start_cycles:
            # The GPU spins while the host runs the caller's Python and launches its kernels: the
            # timer then measures the GPU's work, not the interpreter's (as in any real pipeline,
            # where launches run ahead of the GPU). Host work longer than this still counts.
            _SLEEP(self._head_start_cycles)
        _RECORD(self._start)
        out = call()
        _RECORD(self._end_stream)
        _DEVICE_SYNC()
        _RECORD(self._end_device)
        _EVENT_SYNC(self._end_device)
        stream_ms = _ELAPSED(self._start, self._end_stream)
        device_ms = _ELAPSED(self._start, self._end_device)
        return stream_ms, device_ms - stream_ms, out, device_ms

    def time_call(self, call: Callable[[], Any]) -> tuple[float, Any]:
        stream_ms, _, out, device_ms = self._raw(call)
        return max(stream_ms, device_ms - self.sync_overhead_ms), out


def refill(inputs: dict, generator: torch.Generator) -> None:
    """New values in the same buffers: same pointers, shapes and ids, different answer."""
    for value in inputs.values():
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value.normal_(generator=generator)


def floor_ms(problem, size: Any, entry: dict) -> float:
    """The physical floor of one call: its bytes at this GPU's copy bandwidth or its FLOPs at the
    measured matmul rate of the task's dtype, whichever takes longer."""
    memory_s = float(problem.bytes_moved(size)) / ceilings.copy_bandwidth(entry)
    compute_s = float(problem.flops(size)) / ceilings.compute_peak(entry, problem.compute_dtype)
    return max(memory_s, compute_s) * 1e3


def measure(problem, fn: Callable, size: Any, seed: int, entry: dict, budget_s: float = 20.0) -> SpeedResult:
    """Time the learner's function and the library (and any extra baselines), alternating, on
    fresh inputs every call. ``entry`` is this GPU's measured ceilings (autograder.ceilings.load())."""
    device = "cuda"
    inputs = problem.make_inputs(size, seed, device)
    args = [arrays.to_learner(v, problem.language) for v in inputs.values()]
    out_dtype = getattr(torch, problem.out_dtype)
    generator = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)

    reference = problem.reference(**inputs)
    tol = checking.problem_tolerance(problem, inputs, reference, problem.library(**inputs), out_dtype)
    # The check inside the loop compares with the library's own answer, which is itself up to
    # library_max_error from the truth: allow both errors.
    loop_tol = checking.Tolerance(atol=2 * tol.atol + tol.library_max_error, rtol=2 * tol.rtol, library_max_error=0.0)
    del reference

    timer = Timer()
    extras = list(problem.extra_libraries)
    for _ in range(3):
        fn(*args)
        problem.library(**inputs)
        for _, extra in extras:
            extra(**inputs)
    _DEVICE_SYNC()

    candidate_ms: list[float] = []
    library_ms: list[float] = []
    extra_ms: dict[str, list[float]] = {name: [] for name, _ in extras}
    wrong = 0
    started = time.perf_counter()
    while len(candidate_ms) < MAX_CALLS:
        refill(inputs, generator)
        expected = problem.library(**inputs)
        elapsed, raw = timer.time_call(lambda: fn(*args))
        candidate_ms.append(elapsed)
        try:
            ok, _, _ = checking.compare(arrays.from_learner(raw, problem.language), expected, loop_tol)
        except (TypeError, RuntimeError):
            ok = False
        wrong += 0 if ok else 1
        del raw, expected
        elapsed, _ = timer.time_call(lambda: problem.library(**inputs))
        library_ms.append(elapsed)
        for name, extra in extras:
            elapsed, _ = timer.time_call(lambda extra=extra: extra(**inputs))
            extra_ms[name].append(elapsed)
        spent = time.perf_counter() - started
        enough = len(candidate_ms) >= MIN_CALLS and sum(candidate_ms) * 1e-3 >= TIMED_SECONDS
        if enough or (len(candidate_ms) >= MIN_CALLS and spent > budget_s):
            break

    bytes_moved = float(problem.bytes_moved(size))
    return SpeedResult(
        size=size,
        candidate=Timing.of(candidate_ms),
        library=Timing.of(library_ms),
        bytes_moved=bytes_moved,
        flops=float(problem.flops(size)),
        floor_ms=floor_ms(problem, size, entry),
        wrong_timed_outputs=wrong,
        extra_libraries={name: Timing.of(samples) for name, samples in extra_ms.items()},
    )


def below_floor(result: SpeedResult) -> bool:
    return result.candidate.median_ms < FLOOR_SLACK * result.floor_ms
