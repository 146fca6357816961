"""How many times the learner's kernels were launched per call, for exercises that must do their work
in a bounded number of launches (a megakernel: one). Counted from what the grader saw, never from
what the learner says: on a GPU, the profiler's kernel launches during the timed calls divided by the
calls; on a CPU, the interpreter's record of every launch of each correctness call. A launch of a
kernel the learner did not write is already a matter for autograder.honesty; this counts theirs.
"""

from __future__ import annotations

from .honesty import is_own


def _too_many(per_call: float, limit: int, where: str) -> dict:
    return {
        "ok": False,
        "message": f"your kernels were launched {per_call:g} times per call ({where}); this exercise allows {limit}: "
        "every stage must run inside the same launch, separated by a grid barrier, not by a kernel boundary",
    }


def judge_cpu(calls: list[dict], limit: int | None) -> dict | None:
    """``calls``: the interpreter's summary of each correctness call (autograder.launch_record)."""
    if limit is None:
        return None
    for call in calls:
        if call and call.get("launches", 0) > limit:
            return _too_many(call["launches"], limit, "counted by the Triton interpreter")
    return None


def judge_gpu(phases: dict[str, dict], own: set[str], charged_us: dict[str, list[float]], limit: int | None) -> dict | None:
    """``phases``: the worker's profile per phase; ``charged_us``: timed phase -> one entry per call."""
    if limit is None:
        return None
    for phase, charges in charged_us.items():
        if not charges:
            continue
        kernels = phases.get(phase, {}).get("kernels", [])
        launches = sum(int(k.get("calls", 0)) for k in kernels if is_own(k["name"], own))
        per_call = launches / len(charges)
        if per_call > limit:
            return _too_many(round(per_call, 2), limit, f"counted by the profiler in {phase}")
    return None
