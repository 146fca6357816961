"""How many times the learner's kernels were launched per call, for exercises that must do their work
in a bounded number of launches (a megakernel: one). Counted from what the grader saw, never from
what the learner says: on a GPU, the profiler's kernel launches during the timed calls divided by the
calls; on a CPU, the interpreter's record of every launch of each correctness call. A launch of a
kernel the learner did not write is already a matter for autograder.honesty; this counts theirs.

On a CPU the same record says how many times the kernels loaded each byte of every input, for
exercises that must read their inputs in one pass (the online softmax: ``max_reads = 1``). A GPU
has no such count: there a second pass shows as the time the extra bytes take.
"""

from __future__ import annotations

from .honesty import is_own


def _too_many(per_call: float, limit: int, where: str) -> dict:
    return {
        "ok": False,
        "message": f"your kernels were launched {per_call:g} times per call ({where}); this exercise allows {limit}: "
        "every stage must run inside the same launch (fused into one kernel, or separated by a grid barrier), not in a kernel of its own",
    }


def _read_again(name: str, reads: int, limit: int) -> dict:
    times = "once" if limit == 1 else f"{limit} times"
    return {
        "ok": False,
        "message": f"your kernels loaded some elements of {name} {reads} times in one call (counted by the Triton interpreter); "
        f"this exercise reads each element of its inputs {times}: carry running statistics (a maximum and a sum, rescaled "
        "when the maximum grows) along one pass instead of going back over the row",
    }


def judge_cpu(calls: list[dict], limit: int | None, max_reads: int | None = None) -> dict | None:
    """``calls``: the interpreter's summary of each correctness call (autograder.launch_record).
    ``max_reads``: when set, the most times one call may load any byte of an input."""
    for call in calls:
        if not call:
            continue
        if limit is not None and call.get("launches", 0) > limit:
            return _too_many(call["launches"], limit, "counted by the Triton interpreter")
        if max_reads is not None:
            for name, reads in call.get("most_reads", {}).items():
                if reads > max_reads:
                    return _read_again(name, reads, max_reads)
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
