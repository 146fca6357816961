"""Start one grading: a judge process (autograder._judge) with a time limit, in a folder of its own.
The caller (a notebook, the command line, a test) learns only the judge's result; when the judge
returns or is stopped, no process it started is left."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import osguard
from .session import read_log

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
    return env


def run(problem_name: str, language: str, kind: str, source: str, entry: str, device: str, timed: bool, timeout: float | None = None) -> dict:
    """Grade ``entry`` from ``source``; always returns a scored result with a status."""
    limit = timeout if timeout is not None else timeout_s()
    workdir = tempfile.mkdtemp(prefix="autograder-")
    try:
        os.makedirs(os.path.join(workdir, "learner"))
        module = os.path.join(workdir, "learner", "submission.py")
        Path(module).write_text(source, encoding="utf-8")
        nonce = secrets.token_hex(16)
        job = {"problem": problem_name, "language": language, "kind": kind, "module": module, "entry": entry, "device": device, "timed": timed, "timeout": limit, "workdir": workdir, "nonce": nonce}
        log_path = os.path.join(workdir, "judge.log")
        with open(log_path, "wb") as log:
            judge = subprocess.Popen(
                [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "autograder._judge"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=workdir,
                env=_judge_env(),
                start_new_session=True,
                close_fds=True,
            )
            try:
                out, _ = judge.communicate(json.dumps(job).encode(), timeout=limit + JUDGE_GRACE_S)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                out = b""
            # Whatever the judge did, nothing it started outlives this call.
            osguard.kill_descendants(judge.pid)
            if judge.poll() is None:
                judge.kill()
            judge.wait()
        if timed_out:
            return _verdict(problem_name, "TIMEOUT", f"stopped after {limit:.0f} s: an endless loop, a hang or a far too slow kernel", read_log(os.path.join(workdir, "learner", "output.log")))
        try:
            message = json.loads(out)
            if message.get("nonce") != nonce:
                raise ValueError("not the judge's answer")
            return message["result"]
        except (ValueError, TypeError, KeyError, AttributeError):
            return _verdict(problem_name, "ERROR", "the grader stopped without a result: " + read_log(log_path)[-1500:], read_log(os.path.join(workdir, "learner", "output.log")))
    finally:
        if not os.environ.get("AUTOGRADER_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)


def _verdict(problem_name: str, status: str, message: str, output: str) -> dict:
    return {"problem": problem_name, "status": status, "message": message, "cases": [], "speed": [], "output": output}
