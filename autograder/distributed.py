"""Distributed exercises: the learner's function runs as N ranks of a ``torch.distributed`` group,
and the judge checks what every rank returns against answers it computed itself.

How a grading goes (the judge, autograder.judge_grading, calls :func:`grade`):

- Ranks are workers (autograder._worker), one process each, started, sandboxed and ended by the
  judge like the single worker of every other exercise: rank 0 is the grading's learner worker,
  ranks 1.. are started here. Each holds only its own inputs; the reference never leaves the judge.
- Correctness runs everywhere with the gloo backend on CPU tensors: for each case (a world size and
  a size, fresh inputs from a secret seed) the judge picks a free port, every rank joins the group
  (rank 0 hosts its store), calls the learner's function, and answers with its outputs as raw bytes
  and the record of every ``torch.distributed`` operation it issued (autograder.ranks.CommRecord).
  Every rank's output is checked, so a result that is right on rank 0 only fails.
- A rank that does not answer within the case's time limit is a TIMEOUT that names it and the ranks
  that did answer; every rank is then ended with all it started. A rank that raises fails the case,
  and the others (perhaps stuck waiting for it) are ended.
- The problem's ``check_comm`` reads the records: which library operations did the work (a ring
  built on ``dist.all_reduce`` is REJECTED: the library's collective, not the learner's), and
  whether the communication has the shape the exercise asks for (a ring's traffic, one all-reduce
  per gradient bucket issued during the backward pass).
- Speed (only with >= 2 GPUs; autograder.distributed_speed): the same function as ranks on NCCL, timed by the judge's own clock
  from its go to the last rank's answer; then, once the learner's ranks are gone, the library's
  collective in trusted ranks with the same protocol. The grade is the ratio of bus bandwidths.
"""

from __future__ import annotations

import math
import os
import pickle
import secrets
import select
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from .problem import LinearScale
from .result import CaseResult

# The largest group a grading starts: eight ranks on one machine.
MAX_WORLD = 8


@dataclass(frozen=True)
class BusBandwidthSpeed:
    """The speed part of a collective: its bus bandwidth against the library's, both measured in the
    same grading on ``world_size`` GPUs with NCCL at ``numel`` float32 elements per rank."""

    library: str
    library_source: str
    world_size: int
    numel: int
    scale: LinearScale
    solution_target: float
    calls: int = 10
    algorithm_factor: Callable[[int], float] = lambda n: 2 * (n - 1) / n


@dataclass
class DistributedProblem:
    """A distributed exercise.

    make_case(size, world_size, seed) -> one dict of keyword arguments per rank (tensors, numbers).
    reference(inputs) -> per rank, a dict of output name -> the exact answer (float64).
    tolerance(inputs, expected) -> per rank, a dict of output name -> allowed absolute error (a
        number or a tensor of the output's shape), derived from the computation.
    check_comm(records, world_size, size, inputs) -> (status, message) for the ranks' records of
        communication: ("REJECT", why) when a library did the work, ("UNEXPLAINED", why) when right
        answers could not have come through the recorded traffic (rejected only if they are right),
        ("FAIL", why) when the traffic is not what the exercise asks for, (None, facts) when it is.
    cases -> (world_size, size) pairs, in order; the first world sizes are the small ones.
    """

    name: str
    title: str
    notebook: str
    function: str
    arguments: tuple[str, ...]
    outputs: tuple[str, ...]
    make_case: Callable[[Any, int, int], list]
    reference: Callable[[list], list]
    tolerance: Callable[[list, list], list]
    cases: Sequence[tuple[int, Any]]
    check_comm: Callable[..., tuple[str | None, str]] | None = None
    describe_size: Callable[[Any], str] | None = None
    correctness_points: float = 2.0
    speed: BusBandwidthSpeed | None = None
    speed_points: float = 0.0
    case_timeout: float = 60.0
    trace: bool = False
    language: str = "python"
    notes: dict = field(default_factory=dict)
    kind: ClassVar[str] = "distributed"

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.speed_points

    @property
    def needs_gpu(self) -> bool:
        return False

    @property
    def world_sizes(self) -> list[int]:
        return sorted({w for w, _ in self.cases})

    def size_label(self, world_size: int, size) -> str:
        shown = self.describe_size(size) if self.describe_size else (f"{size:,}" if isinstance(size, int) else str(size))
        return f"{world_size} ranks, {shown}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


# -- the ranks ------------------------------------------------------------------------------------------
class Ranks:
    """The learner's ranks: the grading's worker as rank 0, further workers as ranks 1.."""

    def __init__(self, g, count: int, reuse_learner: bool = True) -> None:
        self.g = g
        self.sessions = [g.learner] if reuse_learner else []
        self.grow(count)

    def grow(self, count: int) -> dict | None:
        """Start ranks up to ``count`` (all side by side), wait for them and load the learner's module
        in each; the first failure to load, if any. Ranks start only when a case needs them, so a
        submission that fails with two ranks never pays for four."""
        from .session import Session

        started = []
        for rank in range(len(self.sessions), count):
            folder = os.path.join(self.g.workdir, f"rank{rank}")
            os.makedirs(folder, exist_ok=True)
            session = Session("learner", "cpu" if self.g.device == "cpu" else "cuda", folder, os.path.join(folder, "output.log"), no_triton=True)
            session.configure(_setup(self.g, folder, self.g.job["module"], self.g.job["entry"]), start_timeout=self.g.remaining())
            self.sessions.append(session)
            started.append(session)
        request = {"op": "load", "module": self.g.job["module"], "entry": self.g.job["entry"], "arguments": list(self.g.problem.arguments), "keywords": True}
        for session in started:
            session.wait_ready()
            header, _ = session.ask(request, timeout=self.g.remaining())
            if not header.get("loaded"):
                return header
        return None

    def exchange(self, world: int, requests: list[tuple[dict, bytes]], timeout: float, doing: str) -> list:
        """Send one request to each of the first ``world`` ranks at once, then collect every answer
        by the deadline. Returns (header, payload) per rank, or None for a rank that did not answer."""
        from . import wire

        for session, (request, payload) in zip(self.sessions[:world], requests, strict=True):
            wire.send(session._to_worker, request, payload)
        answers: list = [None] * world
        deadline = time.monotonic() + timeout
        waiting = set(range(world))
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            fds = {self.sessions[r]._from_worker: r for r in waiting}
            readable, _, _ = select.select(list(fds), [], [], left)
            for fd in readable:
                rank = fds[fd]
                answers[rank] = self.sessions[rank].receive(max(1.0, deadline - time.monotonic()), doing)
                waiting.discard(rank)
        return answers

    def end(self) -> None:
        for session in self.sessions:
            session.end()

    def logs(self) -> str:
        from .session import read_log

        parts = []
        for rank, session in enumerate(self.sessions):
            if session is self.g.learner:
                continue
            text = read_log(session.log_path).strip()
            if text:
                parts.append(f"--- rank {rank} printed ---\n{text[-2000:]}")
        return "\n".join(parts)


def _setup(g, folder: str, module: str, entry: str) -> dict:
    writable = [folder, *_device_files(g.device)]
    return {"role": "learner", "language": "python", "module": module, "entry": entry, "problem": g.job["problem"], "kind": "distributed", "writable": writable}


def _device_files(device: str) -> list[str]:
    import glob

    files = ["/dev/null", "/dev/zero"]
    if device == "cuda":
        # NCCL's shared-memory transport and its proxy create segments in /dev/shm.
        files += [*glob.glob("/dev/nvidia*"), *glob.glob("/dev/dri/*"), "/dev/shm"]
    return files


def _missing_message(world: int, answers: list, timeout: float, doing: str) -> str:
    missing = [r for r, a in enumerate(answers) if a is None]
    answered = [r for r, a in enumerate(answers) if a is not None]
    which = ", ".join(map(str, missing))
    others = f" (rank{'s' if len(answered) > 1 else ''} {', '.join(map(str, answered))} returned)" if answered else " (no rank returned)"
    return (
        f"rank{'s' if len(missing) > 1 else ''} {which} of {world} did not finish {doing} within {timeout:.0f} s{others}: a hang, "
        "e.g. a recv with no matching send, two ranks that both wait to receive first, or a rank that skips a step the others take"
    )


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
    requests = [
        ({"op": "rank_call", "rank": r, "world_size": world, "port": port, "timeout": timeout + 30, "outputs": list(problem.outputs), "trace": problem.trace}, pickle.dumps(inputs[r]))
        for r in range(world)
    ]
    answers = ranks.exchange(world, requests, timeout, "the call")
    if any(a is None for a in answers):
        g.result.cases.append(CaseResult.from_dict({"size": label, "passed": False, "message": "did not finish"}))
        g.fail_hard("TIMEOUT", _missing_message(world, answers, timeout, "the call"))
        return False
    headers = [h for h, _ in answers]
    g.result.extra.setdefault("rank_seconds", []).append([h.get("seconds") for h in headers])
    for rank, header in enumerate(headers):
        if "error" in header:
            error = header["error"]
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
        records = [h.get("comm") or [] for h in headers]
        if not all(h.get("record_active") for h in headers):
            g.fail_hard("REJECT", "the grader's record of your communication was taken off during the call: it must stay in place")
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


def _leave(g, ranks: Ranks, world: int) -> bool:
    answers = ranks.exchange(world, [({"op": "rank_leave"}, b"")] * world, min(60.0, g.remaining()), "leaving the process group")
    if any(a is None for a in answers):
        g.fail_hard("TIMEOUT", _missing_message(world, answers, 60.0, "leaving the process group"))
        return False
    return True


# -- the verdict ----------------------------------------------------------------------------------------
def score(problem: DistributedProblem, result: dict, device: str) -> dict:
    """Correctness all or nothing; speed points from the ratio of bus bandwidths, only after a
    correct and honest run, only where it was measured."""
    result.setdefault("cases", [])
    result.setdefault("speed", [])
    result.setdefault("device", device)
    result["exercise"] = _exercise(problem).to_dict()
    result["title"] = problem.title
    result["max_points"] = problem.max_points
    speed = result.get("distributed_speed") or {}
    measured = "ratio" in speed
    result["max_points_here"] = problem.correctness_points + (problem.speed_points if measured else 0.0)
    correct = problem.correctness_points if result["status"] == "PASS" else 0.0
    points = 0.0
    result["speed_note"] = ""
    if problem.speed is None:
        pass
    elif result["status"] != "PASS":
        result["speed_note"] = "speed is graded only once every rank is right"
    elif speed.get("wrong"):
        result.update(status="REJECT" if speed.get("reject") else "FAIL", message=speed["note"])
        correct = 0.0
    elif not measured:
        spec = problem.speed
        result["speed_note"] = speed.get("note") or (
            f"needs {spec.world_size} GPUs: speed is graded on {spec.world_size} GPUs with NCCL, as bus bandwidth against {spec.library} at {spec.numel * 4 / 2**20:.0f} MiB"
        )
    else:
        scale = problem.speed.scale
        points = problem.speed_points * scale.fraction(speed["ratio"])
        result["speed_metric"] = {"name": "library_ratio", "value": speed["ratio"]}
        result["speed_note"] = (
            f"bus bandwidth {speed['busbw'] / 1e9:,.1f} GB/s against {speed['library']}'s {speed['library_busbw'] / 1e9:,.1f} GB/s "
            f"({speed['ratio']:.2f}x) at {speed['bytes'] / 2**20:.0f} MiB on {speed['world_size']} GPUs; {scale.describe()}"
        )
    result["correctness_points"] = correct
    result["speed_points"] = round(points, 2)
    result["points"] = round(correct + points, 2)
    return result


def _exercise(problem: DistributedProblem):
    """What the report says about the exercise: its speed is a ratio of bus bandwidths to the library's."""
    from .result import Exercise

    exercise = Exercise.of(problem)
    if problem.speed is not None:
        exercise.speed_graded = True
        exercise.library_name = problem.speed.library
        exercise.scale_text = problem.speed.scale.describe()
        exercise.metric_name = "library_ratio"
    return exercise
