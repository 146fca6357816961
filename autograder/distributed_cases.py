"""The correctness cases of a distributed exercise: every rank called on its own inputs over gloo,
each rank's outputs read back from raw bytes and checked against the judge's answers, and the ranks'
record of communication judged by the problem's ``check_comm``."""

from __future__ import annotations

import math
import pickle
import secrets
import time
from collections.abc import Sequence

import torch

from .ddp_model import BOUNDARY
from .distributed import JUDGE_ONLY
from .distributed_ranks import Ranks, free_port, missing_message
from .relay_judge import Relay
from .result import CaseResult

RECORD_TAKEN_OFF = "the grader's record of your communication was taken off during the call: it must stay in place"


# -- outputs --------------------------------------------------------------------------------------------
def decode_outputs(meta: list, data: bytes, names: Sequence[str]) -> dict:
    """The raw bytes a rank sent, back to tensors (the judge reads data, never objects)."""
    from . import shared

    if not isinstance(meta, list) or [m.get("name") for m in meta] != list(names):
        raise ValueError("the outputs do not match what was asked for")
    out, offset = {}, 0
    for m in meta:
        dtype = shared.DTYPES[m["dtype"]]
        shape = [int(d) for d in m["shape"]]
        nbytes = int(m["nbytes"])
        count = math.prod(shape)
        if nbytes != count * torch.empty((), dtype=dtype).element_size() or offset + nbytes > len(data):
            raise ValueError("the outputs' sizes do not add up")
        chunk = bytearray(data[offset : offset + nbytes])
        out[m["name"]] = torch.frombuffer(chunk, dtype=dtype).reshape(shape) if nbytes else torch.empty(shape, dtype=dtype)
        offset += nbytes
    return out


def compare(got: dict, expected: dict, allowed: dict, rank: int) -> str | None:
    """None when every output of one rank is within its allowed error; else where and by how much."""
    for name, want in expected.items():
        have = got[name]
        if tuple(have.shape) != tuple(want.shape):
            return f"rank {rank}: {name} has shape {tuple(have.shape)}, expected {tuple(want.shape)}"
        if not have.dtype.is_floating_point:
            return f"rank {rank}: {name} has dtype {have.dtype}, expected a floating-point tensor"
        error = (have.double() - want.double()).abs()
        bound = allowed[name]
        bound = bound.double() if isinstance(bound, torch.Tensor) else torch.full_like(error, float(bound))
        bad = ~(error <= bound)
        if bool(bad.any()):
            flat = bad.reshape(-1).nonzero()[:3].reshape(-1).tolist()
            shown = "; ".join(
                f"at {i}: got {have.reshape(-1)[i].item():.6g}, expected {want.reshape(-1)[i].item():.6g}" for i in flat
            )
            return f"rank {rank}: {name} wrong at {int(bad.sum())} of {bad.numel()} elements ({shown})"
    return None


# -- the grading ----------------------------------------------------------------------------------------
def grade(g) -> None:
    """Every case of a distributed problem (its speed is autograder.distributed_speed's, next)."""
    from .session import WorkerGone

    problem = g.problem
    ranks = Ranks(g, 1)
    g.result.extra["backend"] = "gloo"
    g.result.device_name = f"CPU (gloo, {', '.join(map(str, problem.world_sizes))} ranks)"
    try:
        for world, size in problem.cases:
            failed = ranks.grow(world)
            if failed:
                error = failed.get("error")
                g.fail_hard("ERROR", f"your code failed while being loaded on another rank: {error['type']}: {error['message']}" if error else failed.get("missing", "your code could not be loaded"))
                return
            started = time.monotonic()
            going = _case(g, ranks, world, size)
            g.result.extra.setdefault("case_seconds", []).append(round(time.monotonic() - started, 3))
            if not going or not g.result.cases[-1].passed:
                break
        g.stage("correctness")
        g.pass_if_all("every rank returned the right answer", "a case failed: see below")
    except WorkerGone as gone:
        g.fail_hard(gone.status, str(gone))
    finally:
        output = ranks.logs()
        ranks.end()
        if output:
            g.result.extra["rank_output"] = output


def _case(g, ranks: Ranks, world: int, size) -> bool:
    """One case on the first ``world`` ranks; False when the grading cannot go on."""
    problem = g.problem
    seed = secrets.randbits(62)
    inputs = problem.make_case(size, world, seed)
    expected = problem.reference(inputs)
    allowed = problem.tolerance(inputs, expected)
    label = problem.size_label(world, size)
    timeout = min(problem.case_timeout, g.remaining())
    port = free_port()
    # What only the judge may hold (the additions at the crossings of autograder.ddp_model) stays here.
    sent = [{k: v for k, v in i.items() if k != JUDGE_ONLY} if isinstance(i, dict) else i for i in inputs]
    requests = [
        ({"op": "rank_call", "rank": r, "world_size": world, "port": port, "timeout": timeout + 30, "outputs": list(problem.outputs), "relay": problem.relay, "collectives": list(problem.relay_collectives)}, pickle.dumps(sent[r]))
        for r in range(world)
    ]
    additions = [i.get(JUDGE_ONLY) if isinstance(i, dict) else None for i in inputs]
    carried = Relay(world, problem.relay_collectives, additions) if problem.relay else None
    answers = ranks.exchange(world, requests, timeout, "the call", relay=carried)
    if any(a is None for a in answers):
        g.result.cases.append(CaseResult.from_dict({"size": label, "passed": False, "message": "did not finish"}))
        g.fail_hard("TIMEOUT", missing_message(world, answers, timeout, "the call"))
        return False
    headers = [h for h, _ in answers]
    g.result.extra.setdefault("rank_seconds", []).append([h.get("seconds") for h in headers])
    # A collective refused on the relay raises in the rank: rejected by name, as the records show it.
    raised = carried is not None and any("error" in h for h in headers) and _records(carried, headers)
    library = problem.check_comm(raised, world, size, inputs) if raised else None
    for rank, header in enumerate(headers):
        if "error" in header and header.get("record_active") is False and problem.check_comm is not None:
            g.fail_hard("REJECT", RECORD_TAKEN_OFF)
            return False
        if "error" in header:
            error = header["error"]
            if library and library[0] == "REJECT":
                error = {**error, "refused": True, "message": library[1]}
            if error.get("refused"):
                g.fail_hard("REJECT", error["message"])
                return False
            g.result.cases.append(CaseResult.from_dict({"size": label, "passed": False, "message": f"rank {rank} raised {error['type']}: {error['message'][:300]}"}))
            g.result.traceback = error.get("traceback")
            return False
        if "wrong_type" in header:
            g.result.cases.append(CaseResult.from_dict({"size": label, "passed": False, "message": f"rank {rank}: {header['wrong_type']}"}))
            return False
    wrong = None
    for rank, (header, payload) in enumerate(answers):
        try:
            got = decode_outputs(header.get("outputs"), payload, problem.outputs)
        except (ValueError, KeyError, TypeError) as exc:
            wrong = f"rank {rank}: the outputs could not be read ({exc})"
            break
        wrong = compare(got, expected[rank], allowed[rank], rank)
        if wrong:
            break
    comm_note = ""
    if problem.check_comm is not None:
        records = _records(carried, headers)
        if records is None:
            g.fail_hard("REJECT", "a rank's record of its communication names all-reduces that the judge did not carry: the record was edited")
            return False
        if not all(h.get("record_active") for h in headers):
            g.fail_hard("REJECT", RECORD_TAKEN_OFF)
            return False
        status, message = problem.check_comm(records, world, size, inputs)
        # A library collective is decisive whatever the answers; right answers that the recorded
        # traffic cannot explain are rejected; a wrong answer is reported as itself.
        if status == "REJECT" or (status == "UNEXPLAINED" and wrong is None):
            g.fail_hard("REJECT", message)
            return False
        if status == "FAIL":
            wrong = message if wrong is None else f"{wrong}. Also: {message}"
        elif status is None:
            comm_note = message
    g.result.cases.append(CaseResult.from_dict({"size": label, "passed": wrong is None, "message": wrong or comm_note}))
    return _leave(g, ranks, world)


def _records(carried: Relay | None, headers: list) -> list | None:
    """Each rank's communication: its own record of torch.distributed's operations, or, where the
    judge carried the messages, the judge's count of them in the places the rank's record marks
    (merge, below); None when a rank's record disagrees with what the judge carried."""
    own = [h.get("comm") or [] for h in headers]
    if carried is None:
        return own
    merged = [merge(ops, carried.records[r], "allreduce" in carried.allowed) for r, ops in enumerate(own)]
    return None if any(m is None for m in merged) else merged


# What the judge counts itself where it carries the messages (autograder.relay).
CARRIED = {"c10d::send", "c10d::recv_", "c10d::recv_any_source_", "c10d::barrier", "c10d::monitored_barrier_"}
FUNCTIONAL_ALL_REDUCE = {"_c10d_functional::all_reduce", "_c10d_functional::all_reduce_", "_c10d_functional_autograd::all_reduce", "c10d_functional::all_reduce"}


def merge(own: list, carried: list, reduces: bool = False) -> list | None:
    """A rank's record for the judge where the judge carried its messages: its own record of
    torch.distributed's operations, in which each all-reduce it issued is marked, with each mark's size
    the judge's; then the judge's sends and receives (where the model's gradients crossed the judge,
    the judge's whole record in its order of arrival). None when the marks and what the judge carried differ
    in number (the record was edited). Where the judge computes all-reduces (``reduces``), a
    functional all-reduce's own operator is left out: the mark it made on the group stands for it."""
    marks = [i for i, op in enumerate(own) if op[0] == "c10d::allreduce_"]
    reduced = [op for op in carried if op[0] == "c10d::allreduce_"]
    if len(marks) != len(reduced):
        return None
    merged = [list(op) for op in own if op[0] not in CARRIED and not (reduces and op[0] in FUNCTIONAL_ALL_REDUCE)]
    if any(op[0] == BOUNDARY for op in carried):
        # Where the gradients cross the judge (autograder.ddp_model), the judge's own order of
        # arrival places the all-reduces, and the rank's marks only had to agree in number.
        return [op for op in merged if op[0] != "c10d::allreduce_"] + [list(op) for op in carried]
    for index, op in zip([i for i, op in enumerate(merged) if op[0] == "c10d::allreduce_"], reduced, strict=True):
        merged[index] = list(op)
    return merged + [op for op in carried if op[0] != "c10d::allreduce_"]


def _leave(g, ranks: Ranks, world: int) -> bool:
    answers = ranks.exchange(world, [({"op": "rank_leave"}, b"")] * world, min(60.0, g.remaining()), "leaving the process group")
    if any(a is None for a in answers):
        g.fail_hard("TIMEOUT", missing_message(world, answers, 60.0, "leaving the process group"))
        return False
    return True
