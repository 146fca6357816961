"""Timing a call that runs in another process with the judge's own CUDA events.

The worker queues the learner's calls of one window (one call, or several on inputs of their own
when a call is short) behind a wait on a "go" word in device memory and writes a "done" word after
them; the judge's stream does [hold][P0][refill the inputs][flush L2][T0][write go][wait done][T1] (the
hold lifted once all of it is queued, so [P0, T0] runs at the GPU's pace, not the host's), then reads
the outputs through IPC right after [Tcs][copy][Tc]. The judge queues all of that once the worker's
answer arrives, that is once every call of the window is launched (or after LAUNCH_WAIT_S if it does
not): launching from Python never enters the window, however many calls it holds, and the new
inputs do not exist until then, so nothing can start on them early. The GPU runs one process's
context at a time, so whatever the worker did before T1 is inside [T0, T1], and an
output that is complete at the copy was computed before it. The worker's own clocks are never read.

What the judge charges a window is T1 - T0 less the switch cost between the two contexts (measured
by the trusted helper with the same protocol on a trivial kernel), and more whenever something
looks off (each call of the window is charged its share): if the judge's own work before T0 took
longer than it does with an idle worker (the worker was running), if the copy started late (the
worker's answer came after its work) or ran long, the charge runs from the earliest point the work
could have begun to the latest point the output was proven complete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from . import cuda_driver, timing

# How long the judge waits for the worker's answer (its calls launched) before it starts the window
# anyway: a function that waits for its own GPU work would otherwise never answer. On an H100 a
# grading worker took 14 to 110 ms to launch and describe a window of 32 calls (a cuBLAS GEMV in
# the trusted helper, a fused decode step with 17 inputs), against 2 to 8 ms for the same calls
# launched in one process: at 50 ms the judge started the longer windows while calls were still
# being launched, and charged the launching as GPU time.
LAUNCH_WAIT_S = 0.25
# Past that, the judge waits on while the worker's process keeps using the CPU (read from /proc, out
# of its reach), up to LAUNCH_WAIT_MAX_S: a stability run on four H100s found a fused decode layer's
# windows launched in 46-91 ms alone, but slower beside other gradings, and the eager layer's in
# the trusted helper in 334 ms, so their launching entered the window and was charged as GPU time
# (a ratio to the library between 11x and 34x, and an honest layer rejected once). A worker that
# waits (for its own GPU work, which cannot start before the go word) uses no CPU, and the window starts.
LAUNCH_WAIT_MAX_S, LAUNCH_STEP_S, LAUNCHING_SHARE = 2.0, 0.05, 0.2
# A segment of the judge's own work is "disturbed" when it runs this much longer than with an idle worker.
SLACK_FACTOR, SLACK_US = 1.25, 30.0
# A held stream takes at most this many launches of the judge's before T0: launches queue on the
# device only so deep, and a launch past that depth waits for the hold the host has not yet lifted
# (2,000 one-element copies behind a hold hung an H200). The refill of a window's inputs is one copy
# (autograder.windows stages them in a block of their own), so it is always held.
HELD_LAUNCHES_MAX = 256
# A copy queued before the output was done starts within this long after T1.
PROMPT_COPY_US = 20.0


class Rescued(Exception):
    """The worker failed mid-call; the judge released its own stream."""


@dataclass
class Raw:
    """One call's event times in microseconds, from the judge's events only."""

    pre_us: float  # refill + flush, just before T0
    window_us: float  # T0 -> T1
    copy_gap_us: float  # T1 -> start of the judge's copy of the output
    copy_us: float  # the copy itself
    calls: int = 1  # the calls of the window, which share its charge
    queued: bool = True  # every call was launched before the window started


@dataclass
class Reference:
    """The same segments with the trusted helper, which does nothing outside its calls."""

    switch_us: float
    pre_us: float
    copy_us: float


def charge(raw: Raw, ref: Reference) -> tuple[float, list[str]]:
    """Microseconds charged to one call, and what made the charge larger than its window."""
    charged, why = raw.window_us, []
    if raw.pre_us > SLACK_FACTOR * ref.pre_us + SLACK_US:
        charged = max(charged, raw.pre_us + raw.window_us - ref.pre_us)
        why.append("GPU work of the worker ran while the judge prepared the call")
    if raw.copy_gap_us > PROMPT_COPY_US:
        charged = max(charged, raw.window_us + raw.copy_gap_us)
        why.append("the call returned after its GPU work ended")
    if raw.copy_us > SLACK_FACTOR * ref.copy_us + SLACK_US:
        charged = max(charged, raw.window_us + raw.copy_gap_us + raw.copy_us - ref.copy_us)
        why.append("the worker's GPU work ran during the judge's read of the output")
    return max(charged - ref.switch_us, 0.0), why


class CrossTimer:
    def __init__(self) -> None:
        torch.cuda.init()
        self.stream = torch.cuda.Stream()
        self.rescue_stream = torch.cuda.Stream()
        # Zeroed by Block: both flags start at 0.
        self.flags = cuda_driver.Block(8)
        # The judge's own word, never shared: its stream waits on it while the host queues the
        # judge's work before T0, so [P0, T0] is GPU time (host launches would otherwise stretch it,
        # and that stretch read as the worker's GPU work).
        self.hold = cuda_driver.Block(4)
        self.release_stream = torch.cuda.Stream()
        self.held = 0
        props = torch.cuda.get_device_properties(0)
        l2_bytes = getattr(props, "L2_cache_size", 0) or (50 << 20)
        with torch.cuda.stream(self.stream):
            self._flush = torch.empty(max(2 * l2_bytes, 64 << 20) // 4, dtype=torch.float32, device="cuda")
            # Loaded now: a kernel loaded lazily behind a held stream could wait for the whole context.
            self._flush.zero_()
        torch.cuda.synchronize()
        self._events = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
        self.persisting_l2 = timing._PersistingL2()
        self.calls = 0

    @property
    def handle(self) -> str:
        return self.flags.handle

    def call(self, send: Callable[[int], None], ready: Callable[[float], bool], receive: Callable[[], dict], refill: Callable[[], None], read: Callable[[dict], list[torch.Tensor] | None], deadline_s: float, held: bool = True, cpu_s: Callable[[], float | None] | None = None, reads: int = 0) -> tuple[Raw, dict, list[torch.Tensor]]:
        """One timed window: ``send(gate)`` asks the worker for its calls, ``ready(seconds)`` says
        whether its answer has arrived within that long (``cpu_s()``: the worker's CPU seconds so
        far, to wait longer while it is launching), ``receive()`` gets it, ``read(answer)``
        returns the worker's outputs (views through IPC) or None. Returns the event times, the
        answer and the judge's own copies of the outputs. ``held``: the judge's stream waits until
        its work before T0 is all queued; a warm-up window, whose ``refill`` may load copy kernels
        for the first time, passes False. ``reads``: the judge copies at least this many outputs
        (the window's own again, round and round, discarded), so that its read after a window that
        holds fewer calls costs what it does after the windows it is compared with."""
        self.calls += 1
        gate = self.calls
        e_pre, e_t0, e_t1, e_copy0, e_copy1 = self._events[:5]
        go, done = self.flags.ptr, self.flags.ptr + 4
        self.persisting_l2.reset()
        send(gate)
        # Nothing of the window is queued until the worker has launched its calls: a wait queued on
        # the GPU ahead of the judge's own launches could deadlock with the driver's lazy loading of
        # a kernel, which waits for the whole context. Its answer (where the outputs are) normally
        # comes with that, and then the copies are queued with the window, right behind T1: the
        # judge's own host work (opening the outputs' memory) never falls between the worker's
        # last call and the copy, so a gap there can only be the worker's GPU work.
        answer, views = None, None
        queued = answered(ready, cpu_s)
        if queued:
            answer = receive()
            views = read(answer) or []
        with torch.cuda.stream(self.stream):
            # The inputs just drawn on the default stream are complete before they are copied.
            self.stream.wait_stream(torch.cuda.default_stream())
            if held:
                self.held += 1
                cuda_driver.wait_value(self.stream, self.hold.ptr, self.held)
            try:
                e_pre.record()
                refill()
                self._flush.zero_()
                e_t0.record()
                cuda_driver.write_value(self.stream, go, gate)
                cuda_driver.wait_value(self.stream, done, gate)
                e_t1.record()
            finally:
                if held:
                    cuda_driver.write_value(self.release_stream, self.hold.ptr, self.held)
        if views is None:
            try:
                answer = receive()
                views = read(answer) or []
            except BaseException:
                self._release(done, gate)
                raise
        with torch.cuda.stream(self.stream):
            e_copy0.record()
            copies, _ = copy_outputs(views, reads)
            e_copy1.record()
        if not _wait(e_copy1, deadline_s):
            self._release(done, gate)
            raise Rescued("the GPU work of the call did not finish in time")
        raw = Raw(
            pre_us=e_pre.elapsed_time(e_t0) * 1e3,
            window_us=e_t0.elapsed_time(e_t1) * 1e3,
            copy_gap_us=e_t1.elapsed_time(e_copy0) * 1e3,
            copy_us=e_copy0.elapsed_time(e_copy1) * 1e3,
            queued=queued,
        )
        return raw, answer, copies

    def _release(self, done: int, gate: int) -> None:
        """Write the done word from a stream of the judge's own, so its timing stream never waits
        for a worker that is gone."""
        cuda_driver.write_value(self.rescue_stream, done, gate)
        _wait_stream(self.stream, 30.0)


def copy_outputs(views: list[torch.Tensor], reads: int = 0) -> tuple[list[torch.Tensor], int]:
    """The judge's copies of a window's outputs, and how many it made: at least ``reads``, the
    outputs again round and round (those copies discarded), so that reading a window of fewer
    calls costs what reading a full one does."""
    copies, made = [], max(len(views), reads) if views else 0
    for index in range(made):
        view = views[index % len(views)]
        copy = torch.empty_like(view, memory_format=torch.contiguous_format)
        copy.copy_(view)
        if index < len(views):
            copies.append(copy)
    return copies, made


def answered(ready: Callable[[float], bool], cpu_s: Callable[[], float | None] | None) -> bool:
    """Whether the worker's answer (every call of the window launched) arrives within LAUNCH_WAIT_S,
    or later while the worker keeps launching: at least LAUNCHING_SHARE of each further step on the
    CPU, up to LAUNCH_WAIT_MAX_S in all."""
    if ready(LAUNCH_WAIT_S):
        return True
    used = cpu_s() if cpu_s is not None else None
    waited = LAUNCH_WAIT_S
    while used is not None and waited < LAUNCH_WAIT_MAX_S:
        if ready(LAUNCH_STEP_S):
            return True
        waited += LAUNCH_STEP_S
        now = cpu_s()
        if now is None or now - used < LAUNCHING_SHARE * LAUNCH_STEP_S:
            return False
        used = now
    return False


def _wait(event: torch.cuda.Event, deadline_s: float) -> bool:
    limit = time.monotonic() + deadline_s
    while not event.query():
        if time.monotonic() > limit:
            return False
        time.sleep(20e-6)
    return True


def _wait_stream(stream: torch.cuda.Stream, deadline_s: float) -> bool:
    limit = time.monotonic() + deadline_s
    while not stream.query():
        if time.monotonic() > limit:
            return False
        time.sleep(1e-4)
    return True


def as_dict(raw: Raw) -> dict:
    return asdict(raw)
