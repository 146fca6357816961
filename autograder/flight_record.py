"""The process group's own record of its operations, read by a timed rank: the collectives that ran
during the learner's timed calls, whatever Python path issued them.

The ring's timed ranks run on NCCL, whose traffic cannot cross the judge, so each timed call's
communication is recorded in the rank's own process (autograder.ranks.CommRecord, a dispatch mode).
A dispatch mode can be switched off for a moment (``_disable_current_modes``), and a process group's
methods can be called without torch.distributed's Python functions. The flight recorder is kept by
the process group in C++ (PyTorch's ``TORCH_FR_BUFFER_SIZE``): every operation it runs gets an entry,
and each group counts the collectives it has queued (its ``pg_status``), a count no Python code can
lower. A rank marks both when it is armed and reads them again after its timed calls; any collective
between the two is reported to the judge, which rejects the timed run (autograder.distributed_speed).
Sends and receives are entries too, marked point-to-point (NCCL's batches add an entry named
``nccl:coalesced`` that carries the group's collective count unchanged).
"""

from __future__ import annotations

import os
import pickle

try:
    from torch._C import _distributed_c10d as _c10d
except ImportError:  # a PyTorch built without torch.distributed
    _c10d = None

# Bound when the grader's modules load, before any learner code: a function of a C module cannot be
# replaced in place, only rebound, and these references do not see a rebinding.
DUMPS = {"nccl": getattr(_c10d, "_dump_nccl_trace", None), "gloo": getattr(_c10d, "_dump_fr_trace", None)}
BUFFER_VARIABLE = "TORCH_FR_BUFFER_SIZE"
# Entries kept (a ring buffer): a round's untimed and timed calls make a few hundred. The group's
# collective count does not depend on it.
ENTRIES = 4096
_putenv = os.putenv


def switch_on() -> None:
    """Before the process group is made: PyTorch reads the buffer's size once, at its first group."""
    _putenv(BUFFER_VARIABLE, str(ENTRIES))


def _trace(backend: str) -> dict | None:
    dump = DUMPS.get(backend)
    if dump is None:
        return None
    trace = pickle.loads(dump(True, False, False))
    return trace if isinstance(trace, dict) else None


def mark(backend: str) -> dict | None:
    """Where the record stands now (after the arm's barrier, a collective of the grader's own): the last
    entry, each group's collective count; None where this PyTorch keeps no record."""
    trace = _trace(backend)
    if not trace or not trace.get("entries"):
        return None
    entries = trace["entries"]
    sequence: dict = {}
    for entry in entries:
        sequence[entry["pg_id"]] = max(sequence.get(entry["pg_id"], 0), entry["collective_seq_id"])
    status = {group: state.get("last_enqueued_collective") for group, state in (trace.get("pg_status") or {}).items()}
    return {"record": max(entry["record_id"] for entry in entries), "sequence": sequence, "status": status}


def collectives_since(marked: dict | None, backend: str) -> list[str] | None:
    """The collectives any process group of this process queued since ``marked``, by the record's
    names (``nccl:all_reduce``); None where no record could be read."""
    trace = _trace(backend) if marked is not None else None
    if trace is None:
        return None
    found = []
    for entry in trace.get("entries") or []:
        if entry["record_id"] <= marked["record"]:
            continue
        name = str(entry.get("profiling_name"))
        # A batch's entry carries the group's collective count: grown, a collective ran before it.
        grown = entry["collective_seq_id"] > marked["sequence"].get(entry["pg_id"], 0)
        if grown or not (entry.get("is_p2p") or name.endswith(":coalesced")):
            found.append(name)
    for group, state in (trace.get("pg_status") or {}).items():
        count = state.get("last_enqueued_collective")
        # A group made since the mark starts with no collective queued (-1, or 0).
        if count != marked["status"].get(group, count if count in (None, -1, 0) else -1):
            found.append(f"a collective of process group {group} (its count went from {marked['status'].get(group)} to {count})")
    return found


def judge(answers: list[dict], backend: str) -> dict | None:
    """The judge's reading of the ranks' reports: a note that rejects the timed run, or None."""
    for rank, header in enumerate(answers):
        ran = header.get("collectives")
        if ran is None:
            return {"note": f"rank {rank} could not read the process group's record of its operations on {backend} (PyTorch's flight recorder): the timed calls cannot be checked"}
        if ran:
            names = ", ".join(sorted(set(ran))[:4])
            return {
                "note": f"in the timed run on {backend}, rank {rank} ran {names}: a collective of torch.distributed, out of sight of the record "
                "in your process (the process group's own record counted it). Build the all-reduce from send/recv only",
                "wrong": True,
                "reject": True,
            }
    return None
