"""How the grader's processes are scheduled on the host's CPUs, which the timings it takes on the host
depend on.

One CPU core for two launch-bound loops that are compared: a loop of small kernel launches runs as
fast as the core that launches it, so the judge times its eager loop and the learner's worker its
replays on the same core (autograder.graphs), and a worker that moves itself off that core is seen.

And what the learner's process must leave alone: a process may lower the priority of, or move, any
process of its user (its parent judge, the trusted helper, the process that forks the judges), and
the change outlives it, into the baselines timed once it is gone. The judge takes the nice value,
policy and CPUs of those processes before the learner's code loads and compares them at the end.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from . import osguard

_LINUX = sys.platform.startswith("linux")


@contextlib.contextmanager
def on_one_cpu(*pids: int):
    """Run the calling thread and every thread of ``pids`` on the caller's CPU, yielded (None where
    nothing was pinned), and give the caller its CPUs back after. Two launch-bound loops timed in two
    processes are then paced by one core: left where the scheduler put them, the same eager step ran
    47% apart in the judge and the worker (results/runs/2026-11-27-4xh100-thirteenth-session/)."""
    me = threading.get_native_id()
    state = _schedule(me) if _LINUX else None
    allowed = set(state[2]) if state else None
    _PRIORITY[me] = state[:2] if state else None
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
                new = set(threads(pid)) - pinned
                if not new:
                    break
                for thread in new:
                    # Refused for a thread still there (another user's process), not one that ended.
                    refused |= not _pin(thread, {cpu}) and os.path.exists(f"/proc/{pid}/task/{thread}")
                pinned |= new
        # A process that could not be pinned leaves both loops where they were; one that moved
        # itself afterwards, or changed its threads' priority, is what threads_off finds.
        if refused:
            cpu = None
            _pin(0, allowed)
        _PRIORITY.update({pid: (_schedule(pid) or (None, None))[:2] for pid in pids})
        yield cpu
    finally:
        _pin(0, allowed)


def _pin(thread: int, cpus: set[int]) -> bool:
    try:
        os.sched_setaffinity(thread, cpus)
    except OSError:
        return False
    return True


# The nice value and policy of each process on_one_cpu pinned, as they were when it pinned them.
_PRIORITY: dict[int, tuple] = {}


def threads_off(pid: int, cpu: int | None) -> list[int]:
    """The threads of ``pid`` that may run on another CPU than ``cpu``, or with another priority than
    its first thread had: changed by the process itself after on_one_cpu pinned it (threads that
    ended meanwhile are left out). A raised priority (root may) would win a busy core from the
    processes the judge's own loop shares it with."""
    return [] if cpu is None else [t for t in threads(pid) if _strayed(t, cpu, _PRIORITY.get(pid))]


def caller_moved(cpu: int | None) -> bool:
    """Whether the calling thread, pinned to ``cpu`` by on_one_cpu, was moved or given another
    priority since (by another process: on_one_cpu's exit would put its CPUs back unseen)."""
    me = threading.get_native_id()
    return cpu is not None and _strayed(me, cpu, _PRIORITY.get(me))


def _strayed(thread: int, cpu: int, priority: tuple | None) -> bool:
    """Off ``cpu``, or at another (nice value, policy) than ``priority``; False for a thread gone."""
    state = _schedule(thread)
    return state is not None and (state[2] != {cpu} or (priority is not None and state[:2] != priority))


def _current_cpu() -> int:
    """The CPU the calling thread last ran on (field 39 of its stat line), -1 if unknown."""
    try:
        return int(osguard.stat_fields("/proc/thread-self/stat")[36])
    except (OSError, ValueError, IndexError):
        return -1


def threads(pid: int) -> list[int]:
    """The ids of ``pid``'s threads (``pid`` alone where /proc cannot say)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return [pid]


def scheduling(pids) -> dict[int, tuple]:
    """(nice value, scheduling policy, CPUs) of each process's first thread: the judge's that times,
    the helper's that launches the library's calls."""
    return {pid: state for pid in pids if (state := _schedule(pid)) is not None}


def changed(before: dict[int, tuple]) -> list[str]:
    """The processes of ``before`` (those still running) whose first thread is not scheduled as it was."""
    found = []
    for pid, was in before.items():
        now = _schedule(pid)
        if now is not None and now != was:
            found.append(f"process {pid}: nice {was[0]} -> {now[0]}, policy {was[1]} -> {now[1]}, CPUs {sorted(was[2])} -> {sorted(now[2])}")
    return found


def restore(before: dict[int, tuple]) -> None:
    """Each process of ``before`` as it was, where the system allows it (raising a lowered priority
    back needs a privilege the grader may not have)."""
    for pid, (nice, policy, cpus) in before.items():
        with contextlib.suppress(OSError):
            os.sched_setscheduler(pid, policy, os.sched_param(0))
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, pid, nice)
        _pin(pid, set(cpus))


def _schedule(thread: int) -> tuple | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, thread), os.sched_getscheduler(thread), frozenset(os.sched_getaffinity(thread))
    except OSError:
        return None
