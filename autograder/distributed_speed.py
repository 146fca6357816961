"""The speed of a distributed exercise: the learner's collective as ranks on NCCL (gloo in the
tests), timed by the judge's own clock from its go to the last rank's answer, then, once the
learner's ranks are gone, the library's collective in trusted ranks with the same protocol; the
ratio of their bus bandwidths is what autograder.distributed.score grades. Two timed outputs,
picked after the run, are read back and checked, the record of every communication call of the
timed run is judged like the correctness cases', and the process group's own count of its collectives
(autograder.flight_record) must not have grown during the timed calls. The ranks join their group and
make its connections before the exercise's code loads, and may open no new one after
(autograder.ranks.Bench.connect): a collective on a communicator of the learner's own cannot be made."""

from __future__ import annotations

import os
import secrets
import time

import torch

from . import flight_record
from .distributed import BusBandwidthSpeed
from .distributed_cases import compare, decode_outputs
from .distributed_ranks import Ranks, connected, free_port, missing_message, rank_setup
from .session import WorkerGone

LIBRARY_MODULE = "library_ranks.py"
# What a refused socket makes gloo, NCCL and Python say, for the note that explains the refusal.
CONNECTION_WORDS = ("not permitted", "resolve", "socket", "connect", "ncclSystemError", "NCCL_ERROR_SYSTEM_ERROR", "DistBackendError")
NO_NEW_CONNECTIONS = (
    " (the timed ranks may open no new connection: they reach each other only through the process group they"
    " were given, on which every collective is seen; a second group or a communicator of your own cannot be made there)"
)


def grade_speed(g) -> None:
    """After the cases (autograder.distributed_cases.grade): the speed of a correct submission, when the
    grading is timed and the problem has a speed part."""
    speed = g.problem.speed
    if g.result.status == "PASS" and speed is not None and g.job.get("timed"):
        g.result.extra["distributed_speed"] = measure_speed(g, speed)
        g.stage("speed")


def measure_speed(g, speed: BusBandwidthSpeed) -> dict:
    """The learner's collective and the library's on ``speed.world_size`` GPUs with NCCL, timed by
    this process's clock; a dict the verdict turns into points (or a note saying why not)."""
    from .ranks import visible_gpus

    gpus = visible_gpus()
    if gpus < speed.world_size:
        return {"note": f"needs {speed.world_size} GPUs: speed is graded on {speed.world_size} GPUs with NCCL; this machine has {gpus}"}
    return compare_speed(g, speed, "nccl")


def compare_speed(g, speed: BusBandwidthSpeed, backend: str) -> dict:
    """The timed protocol on ``backend`` (NCCL in a grading; gloo on CPU tensors in the tests, which
    exercise the same protocol without GPUs)."""
    row = {"world_size": speed.world_size, "numel": speed.numel, "bytes": speed.numel * 4, "backend": backend}
    learner = Ranks(g, 0, reuse_learner=False, network=True)
    try:
        failed = learner.grow(speed.world_size, connect=_connect_request(speed, backend))
        if failed:
            return {"note": failed.get("connect_error") or "your code could not be loaded for the timed run", **_printed(learner)}
        timed = _timed_run(g, learner, speed, backend, check=True)
    except WorkerGone as exc:
        # The cases passed, so their points stand: a rank that dies only on the timed run's backend
        # costs the speed part, and the note says where; what the ranks printed says why (a C++
        # library's abort, NCCL's warnings).
        return {**row, "note": f"on {backend}, {exc}", **_printed(learner)}
    finally:
        learner.end()
    if "seconds" not in timed:
        return {**row, **timed, **_printed(learner)}
    # The slowest rank's CPU time a call to issue its calls, in the best round: near the time a
    # call, the ranks were bound by their CPUs, not by the links.
    row["candidate_s"], row["candidate_issue_cpu_s"] = timed["seconds"], timed["issue_cpu_s"]
    # The library's collective in trusted ranks, once the learner's processes are gone.
    try:
        library = _library_ranks(g, speed, backend)
    except WorkerGone as exc:
        return {**row, "note": f"the library's collective could not be timed: {exc}"}
    try:
        base = _timed_run(g, library, speed, backend, check=False)
    except WorkerGone as exc:
        base = {"note": str(exc)}
    finally:
        library.end()
    if "seconds" not in base:
        return {**row, "note": f"the library's collective could not be timed: {base.get('note')}"}
    factor = speed.algorithm_factor(speed.world_size)
    row["library_s"], row["library_issue_cpu_s"] = base["seconds"], base["issue_cpu_s"]
    row["busbw"] = row["bytes"] / row["candidate_s"] * factor
    row["library_busbw"] = row["bytes"] / row["library_s"] * factor
    row["ratio"] = row["busbw"] / row["library_busbw"]
    row["library"] = speed.library
    return row


def _printed(ranks: Ranks) -> dict:
    """The end of what the timed ranks printed (autograder.distributed_ranks.Ranks.logs), if anything."""
    output = ranks.logs()
    return {"rank_output": output} if output else {}


def _connect_request(speed: BusBandwidthSpeed, backend: str) -> dict:
    """What every timed rank joins before any code of the exercise loads: one process group for the
    three rounds, on a port of the judge's choice (autograder.ranks.Bench.connect)."""
    return {"world_size": speed.world_size, "port": free_port(), "timeout": 300, "backend": backend}


def _library_ranks(g, speed: BusBandwidthSpeed, backend: str):
    path = os.path.join(g.workdir, LIBRARY_MODULE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(speed.library_source)
    ranks = Ranks(g, 0, reuse_learner=False, network=True)
    try:
        _start_library_ranks(g, speed, ranks, path, backend)
    except BaseException:
        ranks.end()
        raise
    return ranks


def _start_library_ranks(g, speed: BusBandwidthSpeed, ranks: Ranks, path: str, backend: str) -> None:
    from .session import Session

    request = _connect_request(speed, backend)
    for rank in range(speed.world_size):
        folder = os.path.join(g.workdir, f"library{rank}")
        os.makedirs(folder, exist_ok=True)
        session = Session("library", "cpu" if g.device == "cpu" else "cuda", folder, os.path.join(folder, "output.log"), no_triton=True)
        # Joined and connected as the learner's ranks are: the same protocol for both.
        setup = {**rank_setup(g, folder, path, "library_collective"), "role": "library", "connect": {**request, "rank": rank}}
        session.configure(setup, start_timeout=g.remaining())
        ranks.sessions.append(session)
    failed = connected(ranks.sessions)
    if failed:
        raise RuntimeError(f"the library's ranks: {failed}")
    for session in ranks.sessions:
        header, _ = session.ask({"op": "load", "module": path, "entry": "library_collective", "arguments": ["tensor"], "keywords": True}, timeout=g.remaining())
        if not header.get("loaded"):
            raise RuntimeError(f"the library's ranks could not load their collective: {header}")


def _timed_run(g, ranks: Ranks, speed: BusBandwidthSpeed, backend: str, check: bool) -> dict:
    """Arm every rank (inputs made, one untimed call, a barrier), then time from the go to the last
    answer; the best of three rounds, each on inputs of its own (no round repeats an earlier one's, so
    a collective that kept its answers has none to give). With ``check``, two calls picked afterwards
    are read back and compared with the sum the judge computes itself."""
    from .ranks import bench_input, bench_shift

    world = speed.world_size
    rounds, issuing = [], []
    for _ in range(3):
        seed = secrets.randbits(40)
        arm = [({"op": "rank_arm", "rank": r, "numel": speed.numel, "seed": seed, "calls": speed.calls}, b"") for r in range(world)]
        answers = ranks.exchange(world, arm, min(300.0, g.remaining()), "the untimed call")
        problem = _speed_problem(world, answers)
        if problem:
            return {"note": problem}
        started = time.perf_counter()
        answers = ranks.exchange(world, [({"op": "rank_go"}, b"")] * world, min(300.0, g.remaining()), "the timed calls")
        elapsed = time.perf_counter() - started
        timed_answers = answers
        problem = _speed_problem(world, answers)
        if problem:
            return {"note": problem}
        rounds.append(elapsed / speed.calls)
        issuing.append(max(header.get("issue_cpu_s", 0.0) for header, _ in answers) / speed.calls)
        if check:
            for index in secrets.SystemRandom().sample(range(speed.calls), 2):
                outputs = ranks.exchange(world, [({"op": "rank_output", "index": index}, b"")] * world, min(300.0, g.remaining()), "reading an output")
                problem = _speed_problem(world, outputs)
                if problem:
                    return {"note": problem}
                inputs = [bench_input(speed.numel, seed, r).roll(bench_shift(r, index)).double() for r in range(world)]
                expected = torch.stack([x for x in inputs]).sum(0)
                bound = torch.stack([x.abs() for x in inputs]).sum(0) * (world * 2 * torch.finfo(torch.float32).eps)
                for rank, (header, payload) in enumerate(outputs):
                    got = decode_outputs(header.get("outputs"), payload, ["out"])
                    wrong = compare(got, {"out": expected}, {"out": bound}, rank)
                    if wrong:
                        return {"note": f"a timed call returned a wrong answer ({wrong}): every call must compute its own result", "wrong": True}
        if check and g.problem.check_comm is not None:
            headers = [header for header, _ in timed_answers]
            if not all(h.get("record_active") for h in headers):
                return {"note": "the grader's record of your communication was taken off during the timed calls", "wrong": True, "reject": True}
            for index in range(speed.calls):
                status, message = g.problem.check_comm([h["comm"][index] for h in headers], world, speed.numel, None)
                if status in ("REJECT", "FAIL", "UNEXPLAINED"):
                    return {"note": f"in the timed run on {backend}: {message}", "wrong": True, "reject": status != "FAIL"}
        answers = ranks.exchange(world, [({"op": "rank_close"}, b"")] * world, 120.0, "closing the group")
        if any(a is None for a in answers):
            return {"note": missing_message(world, answers, 120.0, "closing the group")}
        # Read after the clock stopped: the process group's own count of its collectives.
        hidden = flight_record.judge([header for header, _ in answers], backend) if check else None
        if hidden:
            return hidden
    return {"seconds": min(rounds), "rounds": rounds, "issue_cpu_s": issuing[rounds.index(min(rounds))]}


def _speed_problem(world: int, answers: list) -> str | None:
    if any(a is None for a in answers):
        return missing_message(world, answers, 300.0, "the timed run")
    for rank, (header, _) in enumerate(answers):
        if "error" in header:
            message = header["error"]["message"][:300]
            refused = any(word in f"{header['error']['type']} {message}" for word in CONNECTION_WORDS)
            return f"rank {rank} raised {header['error']['type']} in the timed run: {message}" + (NO_NEW_CONNECTIONS if refused else "")
        if "wrong_type" in header:
            return f"rank {rank}: {header['wrong_type']}"
    return None
