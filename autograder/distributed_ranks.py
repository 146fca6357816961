"""The ranks of a distributed grading, from the judge's side: worker sessions started, sandboxed
and ended like the grading's learner worker, each sent its request at once and its answer collected
by one deadline, and the message that names the ranks that did not answer."""

from __future__ import annotations

import os
import select
import shutil
import socket
import time


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ranks:
    """The learner's ranks: the grading's worker as rank 0, further workers as ranks 1.."""

    def __init__(self, g, count: int, reuse_learner: bool = True, network: bool | None = None) -> None:
        self.g = g
        self.sessions = [g.learner] if reuse_learner else []
        # Ranks whose messages the judge carries have no network (autograder.relay); NCCL's need one.
        self.network = not getattr(g.problem, "relay", False) if network is None else network
        self.grow(count)

    def grow(self, count: int, connect: dict | None = None) -> dict | None:
        """Start ranks up to ``count`` (all side by side), wait for them and load the learner's module
        in each; the first failure to load, if any. Ranks start only when a case needs them, so a
        submission that fails with two ranks never pays for four. ``connect`` (a timed run's ranks,
        all started here): what each rank joins, with its rank added, as it starts, before the module
        loads (autograder.ranks.Bench.connect)."""
        from .session import Session

        started = []
        for rank in range(len(self.sessions), count):
            folder = os.path.join(self.g.workdir, f"rank{rank}")
            os.makedirs(folder, exist_ok=True)
            # A copy of the submission of its own: a rank may read the folder its module lies in, and
            # the first rank's (the grading's worker's) is where that rank writes.
            module = shutil.copy(self.g.job["module"], folder)
            network = self.g.network.env() if self.network and getattr(self.g, "network", None) else None
            session = Session("learner", "cpu" if self.g.device == "cpu" else "cuda", folder, os.path.join(folder, "output.log"), no_triton=True, env=network)
            setup = rank_setup(self.g, folder, module, self.g.job["entry"], self.network)
            session.configure({**setup, "connect": {**connect, "rank": rank}} if connect else setup, start_timeout=self.g.remaining())
            self.sessions.append(session)
            started.append((session, module))
        for session, _ in started:
            session.wait_ready()
        failed = connected(self.sessions[:count]) if connect else None
        if failed:
            return {"connect_error": failed}
        for session, module in started:
            request = {"op": "load", "module": module, "entry": self.g.job["entry"], "arguments": list(self.g.problem.arguments), "keywords": True}
            header, _ = session.ask(request, timeout=self.g.remaining())
            if not header.get("loaded"):
                return header
        return None

    def exchange(self, world: int, requests: list[tuple[dict, bytes]], timeout: float, doing: str, relay=None) -> list:
        """Send one request to each of the first ``world`` ranks at once, then collect every answer
        by the deadline. Returns (header, payload) per rank, or None for a rank that did not answer.
        With ``relay`` (autograder.relay_judge.Relay), the ranks' messages to each other are handed on
        and counted until each answers."""
        from . import wire
        from .session import WorkerGone

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
                header, payload = self.sessions[rank].receive(max(1.0, deadline - time.monotonic()), doing)
                if relay is not None and ("relay" in header or "collective" in header):
                    wrong = relay.carry(rank, header, payload, lambda dst, h, p: wire.send(self.sessions[dst]._to_worker, h, p), lambda r: r not in waiting)
                    if wrong:
                        raise WorkerGone("FAIL", wrong)
                    continue
                answers[rank] = (header, payload)
                waiting.discard(rank)
        return answers

    def end(self) -> None:
        for session in self.sessions:
            session.end()

    def logs(self) -> str:
        from .worker_log import read_log

        parts = []
        for rank, session in enumerate(self.sessions):
            if session is self.g.learner:
                continue
            text = read_log(session.log_path).strip()
            if text:
                parts.append(f"--- rank {rank} printed ---\n{text[-2000:]}")
        return "\n".join(parts)


def connected(sessions: list) -> str | None:
    """Wait for ``sessions``, started side by side with a ``connect`` in their set-up (each joins the
    others as it starts); which rank could not join its process group, or None."""
    for session in sessions:
        session.wait_ready()
    for rank, session in enumerate(sessions):
        if not session.ready.get("connected"):
            return f"rank {rank} could not join the process group: {session.ready.get('connect_error', session.ready)}"
    return None


def rank_setup(g, folder: str, module: str, entry: str, network: bool = True) -> dict:
    writable = [folder, *device_files(g.device)]
    return {"role": "learner", "language": "python", "module": module, "entry": entry, "problem": g.job["problem"], "kind": "distributed", "writable": writable, "network": network}


def device_files(device: str) -> list[str]:
    import glob

    files = ["/dev/null", "/dev/zero"]
    if device == "cuda":
        # NCCL's shared-memory transport and its proxy create segments in /dev/shm.
        files += [*glob.glob("/dev/nvidia*"), *glob.glob("/dev/dri/*"), "/dev/shm"]
    return files


def missing_message(world: int, answers: list, timeout: float, doing: str) -> str:
    missing = [r for r, a in enumerate(answers) if a is None]
    answered = [r for r, a in enumerate(answers) if a is not None]
    which = ", ".join(map(str, missing))
    others = f" (rank{'s' if len(answered) > 1 else ''} {', '.join(map(str, answered))} returned)" if answered else " (no rank returned)"
    return (
        f"rank{'s' if len(missing) > 1 else ''} {which} of {world} did not finish {doing} within {timeout:.0f} s{others}: a hang, "
        "e.g. a recv with no matching send, two ranks that both wait to receive first, or a rank that skips a step the others take"
    )

