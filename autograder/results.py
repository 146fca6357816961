"""Where the course's GPU runs are kept, results/runs/<date>-<GPU>-<what>/, and which run the book shows.

`python -m autograder bench` and tests/gpu/run.sh name their run folders with run_name; the book
shows the benchmark tables and plots of latest_run(). Its pages write ``{{ latest_benchmark }}``
where that folder goes (``{include} ../../{{ latest_benchmark }}/act0.md``): this module is also a
Sphinx extension (_config.yml, local_extensions) that fills it in before MyST reads the page, since
MyST's own substitutions do not reach a directive's path.
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"
RUNS_DIR = RESULTS_DIR / "runs"
# The kind of run whose tables and plots the book shows: one that ran `python -m autograder bench`.
BENCHMARK = "benchmark"
LATEST_BENCHMARK = "{{ latest_benchmark }}"


def run_name(what: str, device_name: str, date: str | None = None) -> str:
    """The folder name of a run: ``2026-11-23-h200-benchmark`` for a benchmark on an "NVIDIA H200"
    (the date in UTC, today unless given)."""
    date = date or time.strftime("%Y-%m-%d", time.gmtime())
    gpu = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-").removeprefix("nvidia-")
    return f"{date}-{gpu or 'unknown-gpu'}-{what}"


def this_gpu() -> str:
    """The name of this machine's first GPU (``cpu`` without one), for naming a run made here."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


# What decides a verdict: the grader's package and the adversarial suite (its cases and expectations).
GRADER_FOLDERS = ("autograder", "tests/adversarial")


def grader_digest(root: Path = RESULTS_DIR.parent) -> str:
    """sha256 of every file under GRADER_FOLDERS (path and bytes, compiled caches left out): GPU
    runs of different calls, sessions or commits that record the same digest graded with the same
    grader, so shards of the adversarial suite run apart add up to one run of the whole suite."""
    digest = hashlib.sha256()
    for folder in GRADER_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def latest_run(what: str = BENCHMARK, runs_dir: Path = RUNS_DIR) -> Path:
    """The newest run folder of this kind. Names start with the date, so the newest sorts last; two
    runs of one kind on the same date sort by the GPU's name."""
    runs = sorted(path for path in runs_dir.glob(f"*-{what}") if path.is_dir())
    if not runs:
        raise FileNotFoundError(f"no run folder named <date>-<GPU>-{what} in {runs_dir}")
    return runs[-1]


def setup(app) -> dict:
    """The Sphinx extension: ``{{ latest_benchmark }}`` in a page becomes the latest benchmark run's
    folder, relative to the book's root."""
    # A config value that differs from the last build's makes Sphinx read every page again, so a
    # new run reaches the pages even though their own text did not change.
    app.add_config_value("latest_benchmark", "", "env")
    app.connect("config-inited", _find_latest_benchmark)
    app.connect("source-read", _fill_in_latest_benchmark)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _find_latest_benchmark(app, config) -> None:
    book_root = Path(app.srcdir)
    config.latest_benchmark = latest_run(BENCHMARK, book_root / "results" / "runs").relative_to(book_root).as_posix()


def _fill_in_latest_benchmark(app, docname, source) -> None:
    source[0] = source[0].replace(LATEST_BENCHMARK, app.config.latest_benchmark)
