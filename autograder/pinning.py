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

_LINUX = sys.platform.startswith("linux")


@contextlib.contextmanager
def on_one_cpu(*pids: int):
    """Run the calling thread and every thread of ``pids`` on the caller's CPU, yielded (None where
    nothing was pinned), and give the caller its CPUs back after. Two launch-bound loops timed in two
    processes are then paced by one core: left where the scheduler put them, the same eager step ran
    47% apart in the judge and the worker (results/runs/2026-11-27-4xh100-thirteenth-session/)."""
    allowed = _affinity(0) if _LINUX else None
    me = threading.get_native_id()
    _PRIORITY[me] = (_schedule(me) or (None, None))[:2]
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
    if cpu is None:
        return []
    return [t for t in _threads(pid) if (state := _schedule(t)) is not None and (state[2] != {cpu} or state[:2] != _PRIORITY.get(pid, state[:2]))]


def caller_moved(cpu: int | None) -> bool:
    """Whether the calling thread, pinned to ``cpu`` by on_one_cpu, was moved or given another
    priority since (by another process: on_one_cpu's exit would put its CPUs back unseen)."""
    me = threading.get_native_id()
    state = _schedule(me)
    return cpu is not None and state is not None and (state[2] != {cpu} or state[:2] != _PRIORITY.get(me, state[:2]))


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


def scheduling(pids, main_only: bool = False) -> dict[int, dict[int, tuple]]:
    """Per process, per thread (its first thread only, with ``main_only``): (nice value, scheduling
    policy, CPUs)."""
    return {pid: {thread: state for thread in ([pid] if main_only else _threads(pid)) if (state := _schedule(thread)) is not None} for pid in pids}


def changed(before: dict[int, dict[int, tuple]]) -> list[str]:
    """The threads of ``before`` (those still running) that are not scheduled as they were."""
    found = []
    for pid, threads in before.items():
        for thread, was in threads.items():
            # Still this process's thread (an id is reused only once it has ended).
            now = _schedule(thread) if os.path.exists(f"/proc/{pid}/task/{thread}") else None
            if now is not None and now != was:
                found.append(f"thread {thread} of process {pid}: nice {was[0]} -> {now[0]}, policy {was[1]} -> {now[1]}, CPUs {sorted(was[2])} -> {sorted(now[2])}")
    return found


def restore(before: dict[int, dict[int, tuple]]) -> None:
    """Each thread of ``before`` as it was, where the system allows it (raising a lowered priority
    back needs a privilege the grader may not have)."""
    for threads in before.values():
        for thread, (nice, policy, cpus) in threads.items():
            with contextlib.suppress(OSError):
                os.sched_setscheduler(thread, policy, os.sched_param(0))
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, thread, nice)
            _pin(thread, set(cpus))


def _schedule(thread: int) -> tuple | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, thread), os.sched_getscheduler(thread), frozenset(os.sched_getaffinity(thread))
    except OSError:
        return None
