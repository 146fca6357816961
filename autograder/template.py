"""CPU gradings' judges, forked from a process that has already imported torch and the grader.

Most of a CPU grading's processor time went to importing torch twice, about 1.5 s in the judge and
as much in the learner's worker. The grading's caller (a notebook kernel, nbgrader, the command
line, a test) keeps one template process instead: ``python -m autograder._judge --template FD``,
which imports torch, Triton under its interpreter (as a CPU worker needs it) and the grader's own
modules, and Dynamo for the first distributed or compile exercise, then forks one judge per CPU
grading on request (``fork_judge``). It never imports the problem definitions, never reads a job,
never runs the learner's code, and its memory is closed to other processes like a judge's.

The judge it forks starts as a judge started ahead does (autograder._judge): it forks its learner's
worker first (autograder.session), and for a distributed exercise a spare worker for each further
rank, then imports the problem definitions and reads its job. These workers are therefore the
judge's children and hold nothing of the grading, as workers started afresh; only their imports
are already done. Their sandbox, folder, environment and the judge's hold on them (subreaper, death
with the judge, the sweep of its descendants) are those of a worker started with its own Python.
The memory exercise's measured workers still start their own Pythons (malloc's settings must be
there from the start). A GPU grading does not use the template: its judge and workers initialise
CUDA, which a fork cannot carry.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

# Variables read while torch and the libraries it loads are imported: the template is started again
# when one of them changes. The rest of the caller's environment goes with each grading.
READ_AT_IMPORT = ("LD_", "PYTHON", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "TORCH", "PYTORCH", "CUDA", "NVIDIA", "MALLOC_")
# The template's first answer waits for its imports; a fork takes milliseconds.
READY_TIMEOUT_S, FORK_TIMEOUT_S = 300.0, 30.0


def usable() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")


class Forked:
    """A judge the template forked: the subset of subprocess.Popen that autograder.sandbox uses. It
    is the template's child, so it is watched and signalled through a pidfd, never by its pid."""

    def __init__(self, pid: int, pidfd: int, stdin: int, stdout: int) -> None:
        self.pid, self._pidfd, self._stdin, self._stdout = pid, pidfd, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and _readable(self._pidfd, 0):
            self.returncode = 0  # its exit status is its parent's, the template's
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not _readable(self._pidfd, timeout):
            raise subprocess.TimeoutExpired("judge", timeout)
        return self.poll()

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def communicate(self, data: bytes, timeout: float) -> tuple[bytes, bytes]:
        import time

        deadline = time.monotonic() + timeout
        try:
            os.write(self._stdin, data)  # a job is a few hundred bytes: the pipe takes it whole
        finally:
            os.close(self._stdin)
            self._stdin = -1
        chunks = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not _readable(self._stdout, left):
                raise subprocess.TimeoutExpired("judge", timeout)
            chunk = os.read(self._stdout, 1 << 16)
            if not chunk:
                return b"".join(chunks), b""
            chunks.append(chunk)

    def close(self) -> None:
        for fd in (self._pidfd, self._stdin, self._stdout):
            if fd >= 0:
                os.close(fd)
        self._pidfd = self._stdin = self._stdout = -1


def _readable(fd: int, timeout: float | None) -> bool:
    """poll, not select: a long-lived caller's descriptors may be numbered past select's limit."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000))))


class Template:
    def __init__(self, env: dict) -> None:
        self.env, self.owner = env, os.getpid()
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "autograder._judge", "--template", str(theirs.fileno())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), start_new_session=True,
            # OpenMP reads its wait policy when torch loads it: the judges and workers forked from
            # here sleep when out of work, as a CPU worker started with its own Python does.
            env={**env, "OMP_WAIT_POLICY": env.get("OMP_WAIT_POLICY", "PASSIVE")},
        )
        theirs.close()
        self.ready = False

    def fits(self, env: dict) -> bool:
        at_import = lambda e: {k: v for k, v in e.items() if k.startswith(READ_AT_IMPORT)}  # noqa: E731
        return self.owner == os.getpid() and self.process.poll() is None and at_import(env) == at_import(self.env)

    def fork(self, workdir: str, env: dict, stderr: int, kind: str, spares: int) -> Forked | None:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            self.sock.settimeout(FORK_TIMEOUT_S if self.ready else READY_TIMEOUT_S)
            if not self.ready:
                self.ready = self.sock.recv(64) == b"ready"
            request = {"workdir": workdir, "env": env, "kind": kind, "spares": spares}
            socket.send_fds(self.sock, [json.dumps(request).encode()], [stdin_r, stdout_w, stderr])
            message, fds, _, _ = socket.recv_fds(self.sock, 256, 1)
            if not self.ready or len(fds) != 1:
                raise OSError("the template did not fork a judge")
            return Forked(json.loads(message)["pid"], fds[0], stdin_w, stdout_r)
        except (OSError, ValueError, KeyError):
            for fd in (stdin_w, stdout_r):
                os.close(fd)
            self.end()
            return None
        finally:
            os.close(stdin_r)
            os.close(stdout_w)

    def end(self) -> None:
        self.sock.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


_template: Template | None = None
_lock = threading.Lock()


def fork_judge(workdir: str, env: dict, stderr: int, kind: str = "kernel", spares: int = 0) -> Forked | None:
    """A judge for a CPU grading of an exercise of ``kind`` in ``workdir``, forked from this
    process's template (started, or started again, as needed), with ``spares`` workers forked ahead
    besides its first; None where a template cannot serve, and the judge starts its own Python."""
    global _template
    if not usable():
        return None
    env = {k: v for k, v in env.items() if not k.startswith("AUTOGRADER_")}
    with _lock:
        if _template is not None and not _template.fits(env):
            if _template.owner == os.getpid():
                _template.end()
            _template = None
        if _template is None:
            _template = Template(env)
        judge = _template.fork(workdir, env, stderr, kind, spares)
        if judge is None:
            _template = None
        return judge


@atexit.register
def _end() -> None:
    if _template is not None and _template.owner == os.getpid():
        _template.end()


# --- The template process ------------------------------------------------------------------------


def serve(fd: int, prepare: Callable[..., None], judge: Callable[[dict, list], None]) -> None:
    """``python -m autograder._judge --template FD``: ``prepare`` (the imports, and those a request's
    kind of exercise adds), then a judge forked for each request, which runs ``judge`` with the
    request and its standard input, output and error."""
    from . import osguard

    osguard.hide_memory()
    osguard.die_with_parent(os.getppid(), signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: (osguard.kill_descendants(os.getpid()), os._exit(1)))
    sock = socket.socket(fileno=fd)
    prepare(None)
    if "autograder.problems" in sys.modules:
        raise RuntimeError("the template imported the problem definitions")
    # Ended judges are collected as they end, never between a fork and its pidfd.
    signal.signal(signal.SIGCHLD, lambda *_: _collect())
    sock.send(b"ready")
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            break
        if not message or len(fds) != 3:
            break
        request = json.loads(message)
        prepare(request.get("kind"))
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
        pid = os.fork()
        if pid == 0:
            sock.close()
            for sig in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
            judge(request, fds)
        pidfd = os.pidfd_open(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
        for f in fds:
            os.close(f)
        socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)
    osguard.kill_descendants(os.getpid())
    os._exit(0)


def _collect() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def start_afresh(env: dict | None, workdir: str) -> None:
    """In a forked process: the caller's environment, a fresh temporary folder and fresh random
    state, as a process started with its own Python has."""
    import tempfile

    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    tempfile.tempdir = None
    os.chdir(workdir)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def close_fds_but(keep: tuple[int, ...]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
