"""Run one exercise in a child process: its own interpreter, working folder and kernel caches, a
time limit, and nothing it prints taken as a result."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_TIMEOUT_S = 300.0
LOG_HEAD = 3000
LOG_TAIL = 3000
PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


def timeout_s() -> float:
    return float(os.environ.get("AUTOGRADER_TIMEOUT", DEFAULT_TIMEOUT_S))


def _child_env(workdir: str, device: str, language: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["MPLBACKEND"] = "Agg"
    # Private kernel caches: one exercise cannot plant compiled code for another.
    env["TRITON_CACHE_DIR"] = os.path.join(workdir, "triton-cache")
    env["CUPY_CACHE_DIR"] = os.path.join(workdir, "cupy-cache")
    if device == "cpu" and language == "triton":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _read_log(path: str) -> str:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size <= LOG_HEAD + LOG_TAIL:
                return f.read().decode("utf-8", "replace")
            head = f.read(LOG_HEAD).decode("utf-8", "replace")
            f.seek(size - LOG_TAIL)
            tail = f.read().decode("utf-8", "replace")
        return f"{head}\n... [{size - LOG_HEAD - LOG_TAIL} bytes of output left out] ...\n{tail}"
    except OSError:
        return ""


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(problem_name: str, language: str, source: str, entry: str, device: str, speed: bool = True, timeout: float | None = None) -> dict:
    """Grade ``entry`` from ``source`` in a child; always returns a result dict with a status."""
    limit = timeout if timeout is not None else timeout_s()
    workdir = tempfile.mkdtemp(prefix="autograder-")
    try:
        module_path = os.path.join(workdir, "submission.py")
        Path(module_path).write_text(source, encoding="utf-8")
        result_path = os.path.join(workdir, "result.json")
        log_path = os.path.join(workdir, "output.log")
        nonce = secrets.token_hex(16)
        job = {"problem": problem_name, "module": module_path, "entry": entry, "device": device, "result": result_path, "speed": speed, "nonce": nonce}
        flags = ["-P"] if sys.version_info >= (3, 11) else []
        with open(log_path, "wb") as log:
            child = subprocess.Popen(
                [sys.executable, *flags, "-m", "autograder._child"],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=_child_env(workdir, device, language),
                start_new_session=True,
                close_fds=True,
            )
            try:
                child.stdin.write(json.dumps(job).encode())
                child.stdin.close()
            except BrokenPipeError:
                pass
            timed_out = False
            try:
                child.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(child.pid)
            child.wait()
        output = _read_log(log_path)
        if timed_out:
            return _verdict(problem_name, "TIMEOUT", f"stopped after {limit:.0f} s: an endless loop, a hang or a far too slow kernel", output)
        try:
            with open(result_path, encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError):
            code = child.returncode
            how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
            return _verdict(problem_name, "ERROR", f"the process running your code {how} before reporting a result", output)
        if not isinstance(result, dict) or result.pop("nonce", None) != nonce:
            return _verdict(problem_name, "ERROR", "the result file was not written by the grader", output)
        result["output"] = output
        return result
    finally:
        if not os.environ.get("AUTOGRADER_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)


def _verdict(problem_name: str, status: str, message: str, output: str) -> dict:
    return {"problem": problem_name, "status": status, "message": message, "cases": [], "speed": [], "output": output}
