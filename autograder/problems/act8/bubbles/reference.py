"""Act 8, exercise 1: the bubbles of an op-by-op decode step, read from a profiler trace.

The learner's ``bubble_report(events)`` gets the events of a torch.profiler trace (Chrome trace
format: dicts with ``name``, ``cat``, ``ph``, ``ts`` and, for complete events, ``dur``, times in
microseconds) and returns how long the GPU was busy, how long it sat in bubbles between its first
and last piece of work, how many pieces of work ran, and the share of the step a perfect fusion
(the same work with no bubbles) would save. Graded exactly against the grader's own reading of the
same events:

- on any machine, on traces drawn from the seed with the shape of a decode step (hundreds of short
  kernels, launch gaps, a copy on a second stream overlapping a kernel, CPU-side events to ignore);
- on a GPU, also on the grader's own profile of the eager decode step of exercise 8.3, taken during
  the grading. That is the measurement: the grader profiles, hands the learner the events it
  recorded, and checks the learner's arithmetic on them against its own.

Times are rebased to the trace's first event and put on a grid of 1/1024 us (under a nanosecond),
so every sum and difference of them is exact in floating point: two correct answers are equal
whatever order they add in.
"""

from __future__ import annotations

import functools
import os
import random

from ....megakernels import GPU_CATEGORIES, event, profile_decode_step, synthetic_trace


def bubble_report(events: list) -> dict:
    """The reference: the union of the GPU intervals is the busy time; the rest of the span from the
    first start to the last end is bubbles."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES)
    if not spans:
        return {"launches": 0, "busy_us": 0.0, "gap_us": 0.0, "saving": 0.0}
    busy = 0.0
    start, end = spans[0]
    for s, e in spans[1:]:
        if s > end:
            busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    busy += end - start
    span = max(e for _, e in spans) - spans[0][0]
    gap = span - busy
    return {"launches": len(spans), "busy_us": busy, "gap_us": gap, "saving": gap / span if span > 0 else 0.0}


def _fixed_cases() -> list:
    back_to_back = [event("k", "kernel", t, 2.0) for t in (10.0, 12.0, 14.0)]
    overlapping = [event("k0", "kernel", 5.0, 10.0), event("copy", "gpu_memcpy", 8.0, 3.0), event("k1", "kernel", 20.0, 4.0),
                   event("k2", "kernel", 22.0, 6.0), event("cudaLaunchKernel", "cuda_runtime", 1.0, 40.0)]
    host_only = [event("aten::add", "cpu_op", 0.0, 5.0), event("cudaLaunchKernel", "cuda_runtime", 1.0, 3.0)]
    return [{"events": back_to_back}, {"events": overlapping}, {"events": host_only}, {"events": [event("k", "kernel", 3.0, 0.0)]}]


def make_cases(seed: int) -> list:
    r = random.Random(seed)
    cases = _fixed_cases()
    cases += [{"events": synthetic_trace(r.getrandbits(62), streams=r.choice((1, 2)))} for _ in range(6)]
    live = _live_profile()
    if live is not None:
        cases.append({"events": live})
    return cases


def describe_case(case: dict) -> str:
    events = case["events"]
    gpu = sum(1 for e in events if e.get("cat") in GPU_CATEGORIES)
    source = "the grader's profile of the eager decode step on this GPU" if any(e.get("live") for e in events[:1]) else "a trace"
    return f"{source}: {len(events)} events, {gpu} on the GPU"


@functools.lru_cache(maxsize=1)
def _live_profile_cached() -> tuple:
    events = profile_decode_step(seed=random.SystemRandom().getrandbits(31))
    if events:
        events[0] = {**events[0], "live": True}
    return tuple(events)


def _live_profile() -> list | None:
    import torch

    if os.environ.get("AUTOGRADER_GRADING") != "judge" or not torch.cuda.is_available():
        return None
    return list(_live_profile_cached())


reference = bubble_report
