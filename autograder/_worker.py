"""The worker: the only process that runs the learner's code (or, as the judge's trusted helper, the
library's). ``python -m autograder._worker IN_FD OUT_FD JUDGE_PID``.

It holds the learner's module, the inputs the judge shares with it and nothing else: no reference,
no tolerance, no ceiling, no timer that counts. It calls the learner's function when asked and
answers with where the output is (or the answer itself, as plain data) and facts about the call
(which kernels ran, whether a canary was overwritten). The judge decides everything from those
and from what it measured itself.

Here: the process, its state and the loop that answers the judge's requests; its set-up is
autograder.worker_setup's, its calls autograder.worker_calls' and autograder.worker_timed's.
"""

from __future__ import annotations

import os
import sys
import traceback

from . import launchers, noexec, osguard, seccomp, wire
from .channel import Channel, out_of_the_way
from .worker_calls import WorkerCalls
from .worker_setup import WorkerSetup
from .worker_timed import TimedCalls


class Worker(WorkerSetup, WorkerCalls, TimedCalls):
    def __init__(self, setup: dict) -> None:
        self.setup = setup
        self.device, self.language = setup["device"], setup.get("language")
        self.fn = None
        self.module = None
        self.arguments: list[str] = []
        self.inputs: dict[int, tuple[dict, list]] = {}
        self.watch = None
        self.flags = None
        self.kept: list = []
        self.ops = None
        self.object = None
        self.harness = None
        self.unrunnable: str | None = None
        # The last correctness call on a CPU, kept for the judge's replay: (inputs id, output, record).
        self.replayable = None
        self.pid = os.getpid()
        # Set by the seal (a learner's worker): what the learner's code changed, or None.
        self.changed_by_learner = None

    def serve(self, channel) -> None:
        handlers = {
            "load": lambda r, p: (self.load(r), b""),
            "inputs": lambda r, p: (self.open_inputs(r), b""),
            "drop": lambda r, p: ({"dropped": self.inputs.pop(r["id"], None) is not None}, b""),
            "call": lambda r, p: self.call(r),
            "replay": lambda r, p: self.replay(r),
            "answer": self.answer,
            "script": lambda r, p: (self.script(r), b""),
            "watch": lambda r, p: (self.watch_kernels(r), b""),
            "harness": self.run_harness,
            "flags": lambda r, p: (self._open_flags(r), b""),
            # One rank of a distributed exercise (autograder.ranks, judged by autograder.distributed_cases).
            "rank_call": lambda r, p: self._ranks().call(self, r, p),
            "rank_leave": lambda r, p: (self._ranks().leave(), b""),
            "rank_arm": lambda r, p: (self._bench().arm(self, r), b""),
            "rank_go": lambda r, p: (self._bench().go(self), b""),
            "rank_output": lambda r, p: self._bench().output(r),
            "rank_close": lambda r, p: (self._bench().close(), b""),
        }
        # Bound before the learner's code is loaded (the first request): what the loop checks and
        # answers with cannot be swapped by that code (autograder.seal).
        changed, send, receive, pid, flush = self.changed_by_learner, channel.send, channel.receive, self.pid, sys.stdout.flush
        # A distributed rank's messages to the others cross the same channel (autograder.relay).
        self.channel_ends = (send, receive)
        while True:
            if os.getpid() != pid:
                os._exit(0)
            request, payload = receive()
            if request["op"] == "quit":
                return
            if request["op"] in ("relay_in", "collective_in"):
                # A message that reached this rank after its call returned: nobody reads it.
                continue
            try:
                header, data = handlers[request["op"]](request, payload)
            except Exception:  # noqa: BLE001 -- the grader's own failure here, reported as such
                traceback.print_exc()
                header, data = {"worker_error": traceback.format_exc()[-3000:]}, b""
            what = changed() if changed is not None else None
            if what is not None:
                header, data = {"tampered": what}, b""
            if os.getpid() != pid:
                os._exit(0)
            flush()
            send(header, data)
            if request.get("gate") is not None:
                self._done(request["gate"])

    def _ranks(self):
        from . import ranks

        return ranks

    def _bench(self):
        if getattr(self, "bench", None) is None:
            self.bench = self._ranks().Bench()
        return self.bench


def ancestors(pid: int) -> list[int]:
    """``pid``'s parent, the parent's parent and so on, up to the first process (pid 1, left out) or
    one whose parent cannot be read. Where Landlock scopes signals (ABI 6) none of them is reachable
    anyway; on older kernels the worker's filter refuses each by its id (autograder.seccomp)."""
    chain: list[int] = []
    while (pid := osguard.parent_of(pid)) > 1 and pid not in chain:
        chain.append(pid)
    return chain


def protected_pids(judge_pid: int, setup: dict) -> tuple[int, ...]:
    """What no signal of the learner's may reach: the judge, the processes above it (the one that
    starts judges, and above that a Jupyter server or an instructor's grading run), and the helper's
    and the judge's threads as the judge names them."""
    return (judge_pid, *ancestors(judge_pid), *setup.get("protected", ()))


def main(in_fd: int | None = None, out_fd: int | None = None, judge_pid: int | None = None) -> None:
    if in_fd is None:
        in_fd, out_fd, judge_pid = (int(a) for a in sys.argv[1:4])
    osguard.die_with_parent(judge_pid)
    in_fd, out_fd = out_of_the_way((in_fd, out_fd))
    # A process the learner's code forks never reads the judge's requests or writes replies.
    os.register_at_fork(after_in_child=lambda: [_close(fd) for fd in (in_fd, out_fd)])
    base, signing_key = wire.receive(in_fd)
    # While this process has one thread (the kernel's condition for a namespace of its own): no file a
    # learner's worker can write may be run (autograder.noexec). On a GPU only where Triton's native
    # modules are built outside the sandbox (autograder.launchers), which Triton needs them to be.
    where = base.get("device") == "cpu" or launchers.triton_builds_here()
    unrunnable = base.get("role") == "learner" and where and noexec.VARIABLE in os.environ
    worker = Worker(base)
    if unrunnable:
        worker.unrunnable = noexec.remount(os.environ[noexec.VARIABLE].split(os.pathsep))
    # A worker that fails (while starting, or with an exception its loop did not answer) leaves its
    # traceback in its log and a non-zero status, which the judge reports; one whose judge closed the
    # channel ends quietly.
    status = 0
    try:
        worker.warm()
        setup, _ = wire.receive(in_fd)
        worker.configure(setup)
        # From here on only the channel's threads touch the two descriptors (autograder.channel).
        channel = Channel(in_fd, out_fd, signing_key)
        del signing_key
        ready = worker.start()
        networked = setup.get("kind") == "distributed" and setup.get("network", True)
        ready["channel"] = seccomp.forbid_channel(channel.fds, passing=networked, protected=protected_pids(judge_pid, setup))
        channel.send({"ready": ready})
        worker.serve(channel)
    except wire.WireError:
        pass
    except BaseException:  # noqa: BLE001 -- the grader's own failure, for the judge to report
        traceback.print_exc()
        status = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # Learner code may have left threads or GPU work behind; leave without waiting for them.
        os._exit(status)


def forked(in_fd: int, out_fd: int, judge_pid: int, where: tuple | None) -> None:
    """A worker the judge forked before it read its job (autograder.template): set up as the worker
    ``python -m autograder._worker`` starts (its own session, /dev/null in, its log out, its pipes and
    no other file, its folder and environment), then ``main``. ``where``: its log, folder and
    environment; None for a spare, which waits, holding nothing of the grading, for the judge to send
    them when it needs another worker (a distributed grading's further ranks)."""
    import signal

    from . import template

    try:
        os.setsid()
        osguard.die_with_parent(judge_pid)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        template.close_fds_but((in_fd, out_fd))
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        osguard.make_dumpable()
        if where is None:
            message, _ = wire.receive(in_fd)
            where = tuple(message["become"])
        log_path, workdir, env = where
        log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for target in (1, 2):
            os.dup2(log, target)
        os.close(log)
        template.start_afresh(env, workdir)
        main(in_fd, out_fd, judge_pid)
    finally:
        os._exit(1)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


if __name__ == "__main__":
    main()
