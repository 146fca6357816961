"""Another process's memory, as the judge reads it from /proc: its resident set (VmRSS), the
kernel's high-water mark of it (VmHWM), which the judge resets before a measured call by writing "5"
to the process's clear_refs, and the part of it that is the process's own data (RssAnon and
RssShmem: not the pages of its program, which come from files and can be dropped and read again). The measured process cannot reach either: it reads nothing here, and
its own clear_refs is not writable to it (autograder.osguard.confine with no writable folder)."""

from __future__ import annotations

import os
import threading

from . import osguard

# How often the sampler reads the resident set while a measured call runs: a second measure beside
# the high-water mark, for a kernel where the mark could not be reset or was reset by the process.
SAMPLE_S = 0.002
# Reading the process tree costs a scan of /proc: once every this many samples.
TREE_EVERY = 25


STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssShmem")


def status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon and RssShmem of ``pid`` in bytes (empty if the process is gone)."""
    found = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in STATUS_KEYS:
                    found[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError):
        return {}
    return found


def data_bytes(found: dict[str, int]) -> int:
    """Anonymous and shared memory: the bytes a process holds as data, whatever it did to the pages of
    its program (dropping them lowers VmRSS, and so the baseline a high-water mark is read against)."""
    return found.get("RssAnon", 0) + found.get("RssShmem", 0)


def reset_peak(pid: int) -> bool:
    """Set ``pid``'s VmHWM back to its VmRSS; whether the kernel let this process do it."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def tree_rss(pid: int) -> int:
    """The resident set of ``pid`` and of every process below it."""
    return sum(status(p).get("VmRSS", 0) for p in (pid, *osguard.descendants(pid)))


class Sampler:
    """The largest resident set of a process (and its descendants) seen while the block runs, and the
    largest of its data (:func:`data_bytes`)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.data_peak = 0
        self.children = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        count = 0
        while not self._stop.is_set():
            if count % TREE_EVERY == 0 and osguard.descendants(self.pid):
                self.children = True
                self.peak = max(self.peak, tree_rss(self.pid))
            else:
                found = status(self.pid)
                self.peak = max(self.peak, found.get("VmRSS", 0))
                self.data_peak = max(self.data_peak, data_bytes(found))
            count += 1
            self._stop.wait(SAMPLE_S)


def cpu_seconds(pid: int) -> float | None:
    """The CPU time ``pid`` has used so far, all its threads, user and system (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            # The command name (field 2) may hold spaces: the fields after it follow its ")".
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
