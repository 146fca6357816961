"""One CPU core for two launch-bound loops that are compared: a loop of small kernel launches runs as
fast as the core that launches it, so the judge times its eager loop and the learner's worker its
replays on the same core (autograder.graphs), and a worker that moves itself off that core is seen.
"""

from __future__ import annotations

import contextlib
import os
import sys

_LINUX = sys.platform.startswith("linux")


@contextlib.contextmanager
def on_one_cpu(*pids: int):
    """Run the calling thread and every thread of ``pids`` on the caller's CPU, yielded (None where
    nothing was pinned), and give the caller its CPUs back after. Two launch-bound loops timed in two
    processes are then paced by one core: left where the scheduler put them, the same eager step ran
    47% apart in the judge and the worker (results/runs/2026-11-27-4xh100-thirteenth-session/)."""
    allowed = _affinity(0) if _LINUX else None
    cpu = _current_cpu()
    cpu = cpu if allowed and cpu in allowed else min(allowed or {0})
    # A container may refuse it: then nothing is pinned.
    if not allowed or not _pin(0, {cpu}):
        yield None
        return
    try:
        refused = False
        for pid in pids:
            pinned: set[int] = set()
            # Later threads inherit their creator's CPU; one started meanwhile is in the next listing.
            for _ in range(5):
                new = set(_threads(pid)) - pinned
                if not new:
                    break
                for thread in new:
                    # Refused for a thread still there (another user's process), not one that ended.
                    refused |= not _pin(thread, {cpu}) and os.path.exists(f"/proc/{pid}/task/{thread}")
                pinned |= new
        # A process that could not be pinned leaves both loops where they were; one that moved
        # itself afterwards is what threads_off finds.
        if refused:
            cpu = None
            _pin(0, allowed)
        yield cpu
    finally:
        _pin(0, allowed)


def _pin(thread: int, cpus: set[int]) -> bool:
    try:
        os.sched_setaffinity(thread, cpus)
    except OSError:
        return False
    return True


def threads_off(pid: int, cpu: int | None) -> list[int]:
    """The threads of ``pid`` that may run on another CPU than ``cpu``: moved there by the process
    itself after on_one_cpu pinned it (threads that ended meanwhile are left out)."""
    return [] if cpu is None else [t for t in _threads(pid) if _affinity(t) not in (None, {cpu})]


def _affinity(thread: int) -> set[int] | None:
    with contextlib.suppress(OSError):
        return os.sched_getaffinity(thread)
    return None


def _current_cpu() -> int:
    """The CPU the calling thread last ran on (field 39 of its stat line), -1 if unknown."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return [pid]
