"""The judge's handle on one worker process: start it, ask it things with a deadline, and end it with
everything it started. Used for the learner's worker and for the judge's trusted library helper."""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import subprocess
import sys
import time

from . import learner_code, noexec, osguard, rss, wire
from .channel import one_way
from .netns import launch
from .wire import WorkerGone

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker_env(workdir: str, device: str) -> dict:
    """The environment a worker starts with, before anyone knows what it will run: its folder for
    temporary files and caches, no device on a CPU grading. What depends on the submission comes
    with its set-up (``submission_env``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRADER_", "PYTORCH_CUDA_ALLOC_CONF"))}
    env["AUTOGRADER_GRADING"] = "worker"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")) if p)
    env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", TMPDIR=os.path.join(workdir, "tmp"))
    env["TRITON_CACHE_DIR"] = os.path.join(workdir, "triton-cache")
    env["CUPY_CACHE_DIR"] = os.path.join(workdir, "cupy-cache")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(workdir, "inductor-cache")
    env.update({"CUDA_CACHE_PATH": os.path.join(workdir, "cuda-cache"), noexec.VARIABLE: os.pathsep.join(noexec.folders())})
    env.pop("TRITON_INTERPRET", None)
    # NVLink SHARP stays off, as in every NCCL measurement of the course.
    env["NCCL_NVLS_ENABLE"] = "0"
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        # OpenMP threads that sleep when out of work rather than spin: the judge and its workers
        # share a few cores, and a memory exercise's two workers, spinning, took twice the time.
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        # Before Triton is first imported: its own library functions (tl.max, tl.sum, ...) are
        # made for the interpreter only if it is on when they are defined.
        env["TRITON_INTERPRET"] = "1"
    return env


def submission_env(kernel_cache: str | None) -> dict:
    """What the worker sets in its environment once it knows the submission, before loading it
    (a value of None: the variable is removed). Compiled kernels (and Triton's autotuning results)
    are kept per submission text: grading the same code again skips compilation, and no other code
    ever loads them."""
    env: dict[str, str | None] = {}
    if kernel_cache:
        env.update(TRITON_CACHE_DIR=os.path.join(kernel_cache, "triton-cache"), CUPY_CACHE_DIR=os.path.join(kernel_cache, "cupy-cache"), TRITON_CACHE_AUTOTUNING="1")
    return env


GONE_WAIT_S = 2.0  # how long a worker whose channel closed may take to end on its own before it is killed


class Session:
    """One worker process. It starts knowing only its role and device (its imports, the CUDA context
    and the profiler's set-up run then, while nothing waits for them); ``configure`` tells it what
    to run."""

    def __init__(self, role: str, device: str, workdir: str, log_path: str, warm_profiler: bool = False, no_triton: bool = False, env: dict | None = None, fork: bool = False) -> None:
        for sub in ("tmp", "triton-cache", "cupy-cache", "inductor-cache", "cuda-cache"):
            os.makedirs(os.path.join(workdir, sub), exist_ok=True)
        self.log_path = log_path
        where = (log_path, workdir, {**worker_env(workdir, device), **(env or {})})
        # A judge forked from the template, before its job (autograder.template), forks its worker
        # (``fork``) and keeps spares for later ones, rather than starting Pythons that import again;
        # a worker whose environment must be set before its Python starts (``env``) starts its own.
        if fork or env or not self._claim_spare(where):
            to_worker_r, self._to_worker = one_way()
            self._from_worker, from_worker_w = one_way()
            if fork:
                self.process = _Child(os.getpid(), to_worker_r, from_worker_w, where)
            else:
                self._start(device, workdir, log_path, env, to_worker_r, from_worker_w)
            os.close(to_worker_r)
            os.close(from_worker_w)
        self.setup: dict = {"role": role, "device": device, "warm_profiler": warm_profiler, "no_triton": no_triton}
        self._start_timeout = 60.0
        self.ready: dict | None = None
        # The worker signs every reply with this key (autograder.channel): a message its process
        # wrote past the channel's writer is told apart.
        key = secrets.token_bytes(32)
        self._signatures = wire.Signatures(key)
        # As raw bytes, not JSON text: no marker beside it in the worker's memory (which its process can read).
        wire.send(self._to_worker, self.setup, key)

    def _claim_spare(self, where: tuple) -> bool:
        while _SPARES:
            child, to_worker, from_worker = _SPARES.pop()
            try:
                wire.send(to_worker, {"become": list(where)})
            except OSError:  # ended meanwhile (autograder.osguard.kill_descendants)
                for fd in (to_worker, from_worker):
                    os.close(fd)
                continue
            self.process, self._to_worker, self._from_worker = child, to_worker, from_worker
            return True
        return False

    def _start(self, device: str, workdir: str, log_path: str, env: dict | None, to_worker_r: int, from_worker_w: int) -> None:
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                launch([sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "autograder._worker", str(to_worker_r), str(from_worker_w), str(os.getpid())], env or {}),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                # ``env``: what must be set before the interpreter starts (malloc's tunables, the ranks' network).
                env={**worker_env(workdir, device), **(env or {})},
                pass_fds=(to_worker_r, from_worker_w),
                start_new_session=True,
            )

    def configure(self, setup: dict, start_timeout: float, kernel_cache: str | None = None) -> None:
        """What the worker runs: its module and entry, the problem, what it may write."""
        for sub in ("triton-cache", "cupy-cache"):
            if kernel_cache:
                os.makedirs(os.path.join(kernel_cache, sub), exist_ok=True)
        self.setup = {**self.setup, **setup, "env": submission_env(kernel_cache)}
        self._start_timeout = start_timeout
        try:
            wire.send(self._to_worker, self.setup)
        except OSError:
            self._gone("starting")

    def wait_ready(self) -> dict:
        if self.ready is None:
            header, _ = self._receive(self._start_timeout, "starting")
            self.ready = header.get("ready") or {}
        return self.ready

    def ask(self, request: dict, payload: bytes = b"", timeout: float = 60.0, max_payload: int = 1 << 30) -> tuple[dict, bytes]:
        try:
            wire.send(self._to_worker, request, payload)
        except OSError:
            self._gone("sending to it")
        return self._receive(timeout, request.get("op", "a request"), max_payload)

    def send_only(self, request: dict) -> None:
        try:
            wire.send(self._to_worker, request)
        except OSError:
            self._gone("sending to it")

    def cpu_seconds(self) -> float | None:
        """The worker's CPU time so far, read from /proc (the worker cannot touch it): how the judge
        tells a worker still launching a window's calls from one that waits."""
        return rss.cpu_seconds(self.process.pid)

    def readable(self, timeout: float) -> bool:
        """Whether the worker's next message has begun to arrive within ``timeout`` seconds."""
        return bool(select.select([self._from_worker], [], [], timeout)[0])

    def receive(self, timeout: float, doing: str) -> tuple[dict, bytes]:
        return self._receive(timeout, doing)

    def _receive(self, timeout: float, doing: str, max_payload: int = 1 << 30) -> tuple[dict, bytes]:
        try:
            header, payload = wire.receive(self._from_worker, timeout, max_payload, self._signatures)
        except wire.Forged:
            self.end()
            raise WorkerGone("REJECT", f"a message reached the judge that the worker did not sign, while {doing}: your code wrote to the judge's channel itself") from None
        except wire.Deadline:
            self.end()
            raise WorkerGone("TIMEOUT", f"your code did not finish {doing} within {timeout:.0f} s: an endless loop, a hang or a far too slow kernel") from None
        except wire.WireError as exc:
            self._gone(doing, str(exc))
        if "tampered" in header:
            self.end()
            raise WorkerGone("REJECT", f"your code reached for or changed what reports on your calls in its process ({header['tampered']}): write a kernel, not a patch of the grader")
        if "worker_error" in header:
            lines = str(header["worker_error"]).strip().splitlines()
            fault = learner_code.gpu_fault(str(header["worker_error"]))
            if fault:
                raise WorkerGone("ERROR", f"a kernel in the process running your code faulted on the GPU (seen while {doing}): {fault}: {learner_code.FAULT_HINT}")
            raise WorkerGone("ERROR", f"the grader failed in the worker while {doing}: {lines[-1] if lines else ''}")
        return header, payload

    def _gone(self, doing: str, detail: str = ""):
        # The channel closed as the worker ends: its own exit status, not end()'s kill, says how.
        self._wait_exit(GONE_WAIT_S)
        self.end()
        code = self.process.returncode
        import signal

        how = f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited with code {code}"
        raise WorkerGone("ERROR", f"the process running your code {how} while {doing}" + (f" ({detail})" if detail and code is None else ""))

    def _wait_exit(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)

    def end(self, spare: tuple[int, ...] = ()) -> None:
        """Stop the worker and everything it started: the judge is a subreaper, so a process the
        learner's code detached becomes the judge's child and is found here. The judge's other
        workers (``spare``) and their descendants are left alone."""
        # The learner's processes cannot leave the worker's group (autograder.seccomp): one signal ends
        # them all, however fast they fork, the worker gone or not (a group's id outlives its leader).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        # Its status first: the sweep below collects every dead child of the judge, after which none
        # can be read (a worker that exited 3 was reported as 0 under load).
        self._wait_exit(10.0)
        osguard.kill_descendants(os.getpid(), spare=spare)
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        self._to_worker = self._from_worker = -1


# Workers a judge forked before its job for the workers it may start after it (fork_spares).
_SPARES: list = []



def fork_spares(count: int) -> None:
    """``count`` workers forked now, before the job, each waiting to be told its log, folder and
    environment (autograder._worker.forked): a distributed grading's further ranks, which would
    otherwise each start a Python and import torch."""
    for _ in range(count):
        to_worker_r, to_worker_w = one_way()
        from_worker_r, from_worker_w = one_way()
        child = _Child(os.getpid(), to_worker_r, from_worker_w, None)
        os.close(to_worker_r)
        os.close(from_worker_w)
        _SPARES.append((child, to_worker_w, from_worker_r))


class _Child:
    """A worker forked by this judge: what Session uses of subprocess.Popen."""

    def __init__(self, judge_pid: int, in_fd: int, out_fd: int, where: tuple | None) -> None:
        self.returncode: int | None = None
        self.pid = os.fork()
        if self.pid == 0:
            from . import _worker

            _worker.forked(in_fd, out_fd, judge_pid, where)

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # collected already (autograder.osguard.kill_descendants)
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Workers:
    """The learner's worker and (on a GPU) the trusted library helper, started before the job is
    known: their imports, CUDA contexts and profiler set-up run while this process imports its own
    (or, for a judge started ahead of a grading, while the learner is still writing code)."""

    def __init__(self, workdir: str, device: str, helper: bool, warm_profiler: bool, fork: bool = False) -> None:
        self.workdir, self.device = workdir, device
        self.learner = Session("learner", device, *self._folder("learner"), warm_profiler=warm_profiler, fork=fork)
        self.helper = Session("library", device, *self._folder("library")) if helper else None

    def restart_learner(self, device: str, env: dict | None = None) -> None:
        """The learner's worker started again: on the CPU with no GPU visible for a prediction (nothing
        it runs can time what it predicts), in the ranks' own network for a distributed exercise."""
        self.learner.end(spare=(self.helper.process.pid,) if self.helper is not None else ())
        self.learner = Session("learner", device, *self._folder("learner"), env=env)

    def _folder(self, role: str) -> tuple[str, str]:
        folder = os.path.join(self.workdir, role)
        os.makedirs(folder, exist_ok=True)
        return folder, os.path.join(folder, "output.log")

    def end(self) -> None:
        for session in (self.learner, self.helper):
            if session is not None:
                session.end()
