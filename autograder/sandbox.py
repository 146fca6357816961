"""Start one grading: a judge process (autograder._judge) with a time limit, in a folder of its own.
The caller (a notebook, the command line, a test) learns only the judge's result; when the judge
returns or is stopped, no process it started is left."""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import learner_code, osguard, registry, template
from .worker_log import read_log

DEFAULT_TIMEOUT_S = 300.0
# The judge ends its own workers at the time limit; this much longer, and it is stopped itself.
JUDGE_GRACE_S = 60.0
PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


def timeout_s() -> float:
    return float(os.environ.get("AUTOGRADER_TIMEOUT", DEFAULT_TIMEOUT_S))


def _judge_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
    # The judge runs only the grader's code: compiled, never interpreted, whatever the caller set.
    env.pop("TRITON_INTERPRET", None)
    # The folder grading was started in (nbgrader's and the class command's course folder): its
    # students' folders are hidden from the learner's worker (learner_code.course_files).
    env.setdefault(learner_code.COURSE_VARIABLE, os.getcwd())
    return env


def gradings_root() -> str:
    """The folder every judge's own folder is made in: a worker may read its own grading's files only
    (learner_code.other_gradings), not another learner's submission or another judge's log."""
    root = os.path.join(tempfile.gettempdir(), learner_code.GRADINGS_FOLDER)
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


class _Judge:
    """A judge process in a folder of its own; started ahead (``--standby``), it has its workers,
    imports and CUDA contexts ready before the job comes."""

    def __init__(self, device: str, standby: bool, kind: str = "kernel", spares: int = 0) -> None:
        self.device = device
        self.workdir = tempfile.mkdtemp(prefix="autograder-", dir=gradings_root())
        os.makedirs(os.path.join(self.workdir, "learner"))
        self.log_path = os.path.join(self.workdir, "judge.log")
        arguments = ["--standby", self.workdir, device] if standby else []
        self.process = None
        if device == "cpu" and not standby:
            # Forked from this process's template, which has imported torch already (autograder.template).
            with open(self.log_path, "wb") as log:
                self.process = template.fork_judge(self.workdir, _judge_env(), log.fileno(), kind, spares)
        if self.process is not None:
            return
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "autograder._judge", *arguments],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.workdir,
                env=_judge_env(),
                start_new_session=True,
                close_fds=True,
            )

    def usable(self, device: str) -> bool:
        return self.device == device and self.process.poll() is None

    def discard(self) -> None:
        self.end()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def end(self) -> None:
        """Stop the judge and everything it started (a judge that has ended already ended them)."""
        if self.process.poll() is None:
            osguard.kill_descendants(self.process.pid)
            self.process.kill()
        self.process.wait()
        if isinstance(self.process, template.Forked):
            self.process.close()


# At most one judge started ahead, for this process's next grading (see keep_ready).
_ready: _Judge | None = None
_keep_ready = False


def keep_ready(device: str) -> None:
    """Keep a judge started ahead of this process's next grading on ``device`` (a GPU only): the
    seconds a grading spends starting Python, torch, three CUDA contexts and the profiler are spent
    while the learner writes code. A notebook's set-up cell turns this on; gradings from the
    command line, nbgrader and scripts start their judge when they need it."""
    global _keep_ready
    _keep_ready = device == "cuda"
    if _keep_ready:
        _start_ahead(device)


def _start_ahead(device: str) -> None:
    global _ready
    if _ready is not None and _ready.usable(device):
        return
    if _ready is not None:
        _ready.discard()
    _ready = _Judge(device, standby=True)


@atexit.register
def _discard_ready() -> None:
    global _ready
    if _ready is not None:
        _ready.discard()
        _ready = None


def _take_judge(device: str, kind: str = "kernel", spares: int = 0) -> _Judge:
    global _ready
    judge, _ready = _ready, None
    if judge is not None and judge.usable(device):
        return judge
    if judge is not None:
        judge.discard()
    return _Judge(device, standby=False, kind=kind, spares=spares)


def run(problem_name: str, language: str, kind: str, source: str, entry: str, device: str, timed: bool, timeout: float | None = None) -> dict:
    """Grade ``entry`` from ``source``; always returns a scored result with a status."""
    limit = timeout if timeout is not None else timeout_s()
    # A distributed exercise's further ranks, forked ahead with a CPU grading's judge.
    spares = max(getattr(registry.get(problem_name), "world_sizes", (1,))) - 1 if kind == "distributed" and device == "cpu" else 0
    judge = _take_judge(device, kind, spares)
    workdir = judge.workdir
    try:
        module = os.path.join(workdir, "learner", "submission.py")
        Path(module).write_text(source, encoding="utf-8")
        nonce = secrets.token_hex(16)
        grader_env = {k: v for k, v in _judge_env().items() if k.startswith("AUTOGRADER_")}
        job = {"problem": problem_name, "language": language, "kind": kind, "module": module, "entry": entry, "device": device, "timed": timed, "timeout": limit, "workdir": workdir, "nonce": nonce, "env": grader_env}
        try:
            out, _ = judge.process.communicate(json.dumps(job).encode(), timeout=limit + JUDGE_GRACE_S)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            out = b""
        except (BrokenPipeError, OSError):
            out, timed_out = b"", False
        # Whatever the judge did, nothing it started outlives this call.
        judge.end()
        if timed_out:
            return _verdict(problem_name, "TIMEOUT", f"stopped after {limit:.0f} s: an endless loop, a hang or a far too slow kernel", read_log(os.path.join(workdir, "learner", "output.log")))
        try:
            message = json.loads(out)
            if message.get("nonce") != nonce:
                raise ValueError("not the judge's answer")
            return message["result"]
        except (ValueError, TypeError, KeyError, AttributeError):
            return _verdict(problem_name, "ERROR", "the grader stopped without a result: " + read_log(judge.log_path)[-1500:], read_log(os.path.join(workdir, "learner", "output.log")))
    finally:
        if not os.environ.get("AUTOGRADER_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)
        if _keep_ready:
            _start_ahead(device)


def _verdict(problem_name: str, status: str, message: str, output: str) -> dict:
    return {"problem": problem_name, "status": status, "message": message, "cases": [], "speed": [], "output": output}
