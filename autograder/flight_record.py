"""The process group's own record of its operations, read by a timed rank: the collectives that ran
during the learner's timed calls, whatever Python path issued them.

The ring's timed ranks run on NCCL, whose traffic cannot cross the judge, so each timed call's
communication is recorded in the rank's own process (autograder.ranks.CommRecord, a dispatch mode).
A dispatch mode can be switched off for a moment (``_disable_current_modes``), and a process group's
methods can be called without torch.distributed's Python functions. The flight recorder is kept by
the process group in C++ (PyTorch's ``TORCH_FR_BUFFER_SIZE``): every operation it runs gets an entry,
and each entry carries its group's count of collectives so far. A rank marks the record when it is
armed and reads it again after its timed calls; any collective between the two (barriers aside: they
move no data), or a record that lost entries or counts a collective it no longer holds, is reported
to the judge, which rejects the timed run (autograder.distributed_speed). Sends and receives are
entries too, marked point-to-point (NCCL's batches add one named ``nccl:coalesced``).
"""

from __future__ import annotations

import math
import os
import pickle

try:
    from torch._C import _distributed_c10d as _c10d
except ImportError:  # a PyTorch built without torch.distributed
    _c10d = None

# Bound when the grader's modules load, before any learner code: a function of a C module cannot be
# replaced in place, only rebound, and these references do not see a rebinding (the seal's fingerprint
# sees one of these names rebound).
DUMP_NCCL = getattr(_c10d, "_dump_nccl_trace", None)
DUMP_GLOO = getattr(_c10d, "_dump_fr_trace", None)
_loads = pickle.loads
BUFFER_VARIABLE = "TORCH_FR_BUFFER_SIZE"
# Entries kept (a ring buffer): a round's untimed and timed calls make a few hundred; a record that
# lost the marked entry is reported.
ENTRIES = 4096
_putenv = os.putenv


def switch_on() -> None:
    """Before the process group is made: PyTorch reads the buffer's size once, at its first group."""
    _putenv(BUFFER_VARIABLE, str(ENTRIES))


def _trace(backend: str) -> dict | None:
    dump = DUMP_NCCL if backend == "nccl" else DUMP_GLOO if backend == "gloo" else None
    if dump is None:
        return None
    trace = _loads(dump(True, False, False))
    return trace if isinstance(trace, dict) else None


def mark(backend: str) -> dict | None:
    """Where the record stands now (after the arm's barrier, a collective of the grader's own): its
    last entry and each group's collective count; None where this PyTorch keeps no record."""
    trace = _trace(backend)
    if not trace or not trace.get("entries"):
        return None
    entries = trace["entries"]
    # Each group's count as its latest entry carries it (a group of an earlier round may share its id).
    sequence = {entry["pg_id"]: entry["collective_seq_id"] for entry in entries}
    return {"record": max(entry["record_id"] for entry in entries), "sequence": sequence}


def _barrier(entry: dict) -> bool:
    """A barrier moves no data (NCCL's is an all-reduce of one element): the ring may wait on one."""
    elements = sum(math.prod(shape) for shape in entry.get("input_sizes") or [])
    return "barrier" in str(entry.get("profiling_name")) or elements <= 1


def collectives_since(marked: dict | None, backend: str) -> list[str] | None:
    """What the process group's record shows since ``marked`` that a ring may not do: its
    collectives by the record's names (``nccl:all_reduce``), barriers aside, and a record that lost
    entries (cleared, or pushed out of its buffer); None where no record could be read."""
    trace = _trace(backend) if marked is not None else None
    if trace is None:
        return None
    entries = trace.get("entries") or []
    if not any(entry["record_id"] == marked["record"] for entry in entries):
        return ["a record that lost its entries (cleared, or overflowed by more operations than the ring makes)"]
    found, sequence, exchanged = [], dict(marked["sequence"]), False
    for entry in entries:
        if entry["record_id"] <= marked["record"]:
            continue
        group, name = entry["pg_id"], str(entry.get("profiling_name"))
        point_to_point = entry.get("is_p2p") or name.endswith(":coalesced")
        exchanged = exchanged or bool(entry.get("is_p2p"))
        if not point_to_point:
            sequence[group] = sequence.get(group, 0) + 1
            if not _barrier(entry):
                found.append(name)
        elif entry["collective_seq_id"] > sequence.get(group, 0):
            # Each entry carries its group's collective count: one grown past the collectives the
            # record holds was grown by one it no longer holds.
            found.append(f"a collective missing from the record before {name}")
            sequence[group] = entry["collective_seq_id"]
    if backend == "nccl" and not exchanged:
        # NCCL records every send and receive: a ring's timed calls make some.
        found.append("no send or receive in the timed calls (the record was cleared)")
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
                "note": f"in the timed run on {backend}, the process group's own record of rank {rank}'s operations shows {names}, which the "
                "record in your process did not: a collective of torch.distributed did the work. Build the all-reduce from send/recv only",
                "wrong": True,
                "reject": True,
            }
    return None
