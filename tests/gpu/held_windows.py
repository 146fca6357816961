"""The grader's timing of a call (autograder/windows.py, crosstime.py), for the tuning scripts.

A window is several calls queued back to back behind a GPU sleep, after an L2 flush, with events
around the calls; a call's time is the window's over its calls, the median of several windows. The
sleep holds the GPU until every call of the window is queued, so the host's dispatch of one call
overlaps the GPU's work on the one before, as in a model. triton.testing.do_bench instead times one
call between events right after its flush, and the host's dispatch of that call is charged to it
whenever it outlasts the flush: cuDNN attention at B=4 H=32 S=4096 D=128 read 1.740 ms under
do_bench in tune_act4_flash and 1.62-1.63 ms in the grader's windows on H100s of the same session
(results/runs/2026-11-26-4xh100-ninth-session/), while the Triton kernels read the same both ways.

    windows = HeldWindows()
    ms = windows.ms(lambda: fn(x))                     # calls a window fitted to WINDOW_US
    ms = windows.ms(call, input_sets=[{...}, {...}])   # call(**inputs), a set per call in turn
"""

from __future__ import annotations

import math
import statistics
import time

import torch

# About 2 ms at 1.98 GHz: longer than launching 32 calls from Python. A window whose calls the host
# had not all queued when the sleep ended is timed again with the sleep doubled, up to 64 times this:
# 128 calls of a Triton launcher in Python took more than 2 ms on an H200 (2026-11-29: 4096 x 4096
# int4 GEMVs of about 5 us read 50 us a call in windows held 2 ms).
SLEEP_CYCLES = 4_000_000
MAX_SLEEP_CYCLES = 64 * SLEEP_CYCLES
# As autograder.windows: a window lasts at least this long, with at most MAX_CALLS calls.
WINDOW_US = 4000.0
MAX_CALLS = 32


class HeldWindows:
    """Times calls in held windows on the current GPU; ``smoke`` times them on the host instead (a
    script's GPU path run on a CPU, where the times mean nothing)."""

    def __init__(self, windows: int = 10, smoke: bool = False) -> None:
        self.windows, self.smoke = windows, smoke
        self.sleep_cycles = SLEEP_CYCLES
        # Windows whose sleep ended before their last call was queued (the GPU may have waited on
        # the host inside them): a script prints this; it should stay 0.
        self.unqueued = 0
        if not smoke:
            l2 = torch.cuda.get_device_properties(0).L2_cache_size
            # Zeroing twice the L2 evicts whatever the last window left in it.
            self.flush = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device="cuda")

    def calls_for(self, call, input_sets: list[dict] | None = None) -> int:
        """Calls a window: enough that it lasts WINDOW_US, at most MAX_CALLS (one timed call decides)."""
        if self.smoke:
            return 2
        inputs = (input_sets or [{}])[0]
        call(**inputs)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(**inputs)
        end.record()
        end.synchronize()
        return max(1, min(MAX_CALLS, math.ceil(WINDOW_US / max(1e3 * start.elapsed_time(end), 1.0))))

    def ms(self, call, input_sets: list[dict] | None = None, calls: int | None = None) -> float:
        """Median milliseconds a call of ``call`` (with each of ``input_sets`` in turn), ``calls`` a window."""
        sets = input_sets or [{}]
        calls = calls or self.calls_for(call, sets)
        if self.smoke:
            started = time.perf_counter()
            for c in range(calls):
                call(**sets[c % len(sets)])
            return 1e3 * (time.perf_counter() - started) / calls
        call(**sets[0])
        times = []
        while len(times) < self.windows:
            released = torch.cuda.Event()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(self.sleep_cycles)
            released.record()
            self.flush.zero_()
            start.record()
            for c in range(calls):
                call(**sets[c % len(sets)])
            end.record()
            caught_up = bool(released.query())
            torch.cuda.synchronize()
            if caught_up and self.sleep_cycles < MAX_SLEEP_CYCLES:
                # The GPU reached the calls before the host had queued them all: the window timed
                # the host's launches. Hold longer and time it again (as autograder.windows does).
                self.sleep_cycles *= 2
                continue
            self.unqueued += caught_up
            times.append(start.elapsed_time(end) / calls)
        return statistics.median(times)
