"""requirements.txt resolves on PyPI alone, as on a clean machine: no local wheels, no pip
configuration, for the Python running the tests and for the oldest Python the README promises. Two pip resolutions against PyPI, in
every run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements.txt"
OLDEST_PYTHON = "3.10"  # README: "Python 3.10+"


def for_python(requirements: Path, python_version: str, out: Path) -> Path:
    """A copy of ``requirements`` with its environment markers decided for ``python_version``: pip
    judges markers by the interpreter it runs on, even when it resolves for another version."""
    lines = []
    for raw in requirements.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"python_version": python_version, "python_full_version": f"{python_version}.0"}):
            req.marker = None
            lines.append(str(req))
    out.write_text("\n".join(lines) + "\n")
    return out


def resolve(requirements: Path, python_version: str | None = None) -> tuple[bool, str, dict]:
    """pip's dry run of ``pip install -r requirements`` against PyPI only: ``--isolated`` drops pip's
    environment variables (PIP_FIND_LINKS, ...) and PIP_CONFIG_FILE=os.devnull every pip.conf, which
    on a CI machine may add local wheels, other indexes or constraints. Returns (ok, pip's messages,
    the resolved report)."""
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed", "--progress-bar=off"]
        command += ["--disable-pip-version-check", "--report", str(report)]
        if python_version:
            requirements = for_python(requirements, python_version, Path(tmp) / "requirements.txt")
            command += ["--python-version", python_version, "--only-binary=:all:"]
        proc = subprocess.run([*command, "-r", str(requirements)], env=env, capture_output=True, text=True, timeout=900)
        resolved = json.loads(report.read_text()) if proc.returncode == 0 and report.exists() else {}
    return proc.returncode == 0, _explanation(proc.stdout + proc.stderr), resolved


def _explanation(output: str) -> str:
    """pip's output less its progress lines: what conflicted and why."""
    progress = ("Collecting", "Downloading", "Using cached", "Obtaining", "Would install")
    return "\n".join(line for line in output.splitlines() if line.strip() and not line.strip().startswith(progress))


def _versions(report: dict) -> dict:
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report.get("install", [])}


def test_requirements_resolve_on_pypi_alone():
    targets = [None, OLDEST_PYTHON]
    with ThreadPoolExecutor(len(targets)) as pool:
        outcomes = list(pool.map(lambda version: resolve(REQUIREMENTS, version), targets))
    problems = []
    for version, (ok, messages, report) in zip(targets, outcomes, strict=True):
        python = f"Python {version or '.'.join(map(str, sys.version_info[:2]))}"
        if not ok:
            problems.append(f"--- {python}: pip install -r requirements.txt fails against PyPI alone:\n{messages[-3000:]}")
            continue
        versions = _versions(report)
        missing = [name for name in ("torch", "triton", "nbgrader", "jupyter-book") if name not in versions]
        if missing:
            problems.append(f"--- {python}: resolved without {', '.join(missing)}")
    assert not problems, (
        "requirements.txt must install from PyPI alone (README: Python 3.10+, PyPI). Loosen the pin pip names "
        "above: PyPI's torch is a CUDA build that pins its own triton (so the triton range must include it), and "
        "a package whose newest release dropped an old Python needs an environment marker.\n" + "\n".join(problems)
    )
