"""On a GPU: every solution notebook earns full marks in every graded cell, speed included; every
untouched exercise earns zero without crashing the kernel. Executed copies go to $GPU_OUT."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import traceback
from pathlib import Path

import pytest

from autograder import problem as problem_mod
from autograder import registry
from autograder.grading import RESULTS_DIR_VARIABLE

ROOT = Path(__file__).resolve().parent.parent.parent
SOLUTIONS = sorted((ROOT / "solutions").rglob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").rglob("*.ipynb"))


def _only_exact_answers(path: Path) -> bool:
    """A notebook whose every exercise has answers that do not depend on the GPU (exact answers, classes
    driven by the grader): nothing in it is timed."""
    problems = registry.for_notebook(str(path))
    return bool(problems) and all(not problem_mod.has_speed_grade(p) and not problem_mod.is_measured(p) for p in problems)


# Notebooks that time kernels run one at a time; those with only exact answers can share the GPU
# with the untouched exercises (tests/gpu/run.sh runs them in its parallel step).
TIMED_SOLUTIONS = [p for p in SOLUTIONS if not _only_exact_answers(p)]
EXACT_SOLUTIONS = [p for p in SOLUTIONS if _only_exact_answers(p)]

pytestmark = pytest.mark.gpu


class _SignalLog:
    """The signals this process's event loop handles while a notebook runs, each with the processes
    running then (``ps``). nbclient shuts its kernel down on SIGINT or SIGTERM and the test goes on:
    in one run two kernels were shut down that way, one minute apart, each in its first graded cell.
    The record of a later run named the sender, `timeout` of tests/gpu/run.sh's step at its limit
    (the step's own time ran out): each line now says so when a `timeout` above this process has run
    as long as its limit. The loop learns of a signal from a byte in its wake-up socket; whether the
    process was really signalled is told by the Python-level handler asyncio installs, which runs
    only for a signal (a byte written there by other code holding a stale descriptor does not)."""

    def __enter__(self):
        import asyncio.unix_events as unix

        self.lines, self._unix, self._received = [], unix, []
        original = self._original = unix._UnixSelectorEventLoop.add_signal_handler
        self._noop = unix._sighandler_noop
        unix._sighandler_noop = lambda signum, frame: self._received.append(signum)

        def add(loop, sig, callback, *args):
            def logged(*arguments):
                ps = subprocess.run(["ps", "-eo", "pid,ppid,pgid,sid,etimes,args"], capture_output=True, text=True, check=False).stdout
                how = "a signal" if sig in self._received else "a byte in the event loop's wake-up socket, no signal"
                self.lines.append(f"{time.strftime('%H:%M:%S')} {signal.Signals(sig).name} reached pytest ({os.getpid()}): {how}{_expired_limit(ps)}\n{ps}")
                callback(*arguments)

            return original(loop, sig, logged, *args)

        unix._UnixSelectorEventLoop.add_signal_handler = add
        return self

    def __exit__(self, *_):
        self._unix._UnixSelectorEventLoop.add_signal_handler = self._original
        self._unix._sighandler_noop = self._noop


def _expired_limit(ps: str) -> str:
    """', sent by <timeout N>, which has run its N s' when a `timeout` above this process (in ``ps -eo
    pid,ppid,pgid,sid,etimes,args``) has reached its limit: a step of tests/gpu/run.sh out of time."""
    table = {}
    for line in ps.splitlines()[1:]:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[0].isdigit():
            table[int(fields[0])] = (int(fields[1]), int(fields[4]) if fields[4].isdigit() else 0, fields[5])
    pid = table.get(os.getpid(), (0,))[0]
    while pid in table:
        parent, elapsed, args = table[pid]
        limit = _timeout_limit(args.split())
        if limit is not None and elapsed + 1 >= limit:
            return f", sent by `timeout {limit:g}` (process {pid}), which has run its {limit:g} s: the step's time limit"
        pid = parent
    return ""


def _timeout_limit(words: list[str]) -> float | None:
    """The limit in seconds of a ``timeout [OPTION]... DURATION COMMAND`` command line, None for any
    other command. Options taking a value (``-k 30``, ``-s KILL``) are skipped with it: a CI runner's
    ``timeout -k 30 90m`` was once read as a 30 s limit. DURATION takes coreutils' s, m, h, d suffixes."""
    if not words or words[0].rsplit("/", 1)[-1] != "timeout":
        return None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-k", "-s", "--kill-after", "--signal"):
            next(rest, None)
        elif not word.startswith("-"):
            match = re.fullmatch(r"(\d+(?:\.\d*)?)([smhd]?)", word)
            return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]] if match else None
    return None


def _execute(path: Path, allow_errors: bool):
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    # Sixteen kernels starting at once beside sixteen pytest workers may take longer than nbclient's
    # 60 s to answer. On two H200s one untouched exercise failed among the first results, before its
    # notebook was written (the failure's reason was not kept): a kernel that never started fits that.
    client = nbclient.NotebookClient(nb, timeout=900, startup_timeout=300, allow_errors=allow_errors, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    out = os.environ.get("GPU_OUT")
    # The solutions' graded results are kept for the speed benchmark (autograder bench --from).
    record = out and path.is_relative_to(ROOT / "solutions")
    if record:
        os.environ[RESULTS_DIR_VARIABLE] = str(Path(out) / "graded")
    folder = Path(out) / "notebooks" if out else None
    name = f"{path.parent.parent.name}-{path.parent.name}-{path.name}"
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
    # The kernel's own output (and, from faulthandler, its Python stack if it dies of a signal) goes to
    # a file beside its notebook: pytest prints a kernel's output only in its summary, which a step
    # cut at its limit never reaches (two notebooks' kernels died in one run with no reason kept).
    kernel_log = open(folder / f"{name}.kernel.log", "wb") if folder else subprocess.DEVNULL
    failure, signals = None, _SignalLog()
    try:
        with signals:
            client.execute(stdout=kernel_log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    except Exception as error:
        # A kernel that died or never started: its notebook as far as it ran and the error are kept,
        # since a step cut off at its limit never prints pytest's summary of why.
        failure = error
        raise
    finally:
        os.environ.pop(RESULTS_DIR_VARIABLE, None)
        if folder:
            kernel_log.close()
            nbformat.write(nb, folder / name)
            if failure is not None:
                (folder / f"{name}.error.txt").write_text("".join(traceback.format_exception(failure)))
            if signals.lines:
                (folder / f"{name}.signals.txt").write_text("\n".join(signals.lines))
    return nb


def _graded_cells(nb):
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            yield meta["grade_id"], float(meta["points"]), cell


def _points(cell) -> float | None:
    for output in cell.outputs:
        if output.output_type == "error":
            return None
        if output.output_type == "execute_result":
            return float(output.data["text/plain"])
    return None


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _points_here(cell, points: float) -> float:
    """The points a graded cell can earn on this machine: a distributed exercise's speed needs more
    GPUs than a pytest worker pinned to one GPU sees (tests/gpu/test_act5_gpu.py grades it on all of
    them), so there its speed cell earns 0 and says why."""
    import re

    import torch

    found = re.search(r'autograder\.grade_speed\(\s*"([^"]+)"', "".join(cell.source))
    problem = registry.get(found.group(1)) if found else None
    if problem is not None and problem_mod.is_distributed(problem) and torch.cuda.device_count() < problem.speed.world_size:
        assert f"needs {problem.speed.world_size} GPUs" in _text(cell), _text(cell)
        return 0.0
    return points


def _assert_full_marks(path: Path) -> None:
    nb = _execute(path, allow_errors=False)
    for grade_id, points, cell in _graded_cells(nb):
        assert not any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs), f"{grade_id} wrote to stderr"
        expected = _points_here(cell, points)
        assert _points(cell) == expected, f"{grade_id}: {_points(cell)} of {expected}\n{_text(cell)}"


def _timed_params(paths: list[Path]) -> list:
    """Each timed notebook gets 240 s for every problem it times (run.sh gives a test 150 s): one
    notebook can grade one function as several problems (FlashAttention with and without its mask),
    and a grading can time torch.compile beside the library for up to 120 s (bias + GELU). A
    notebook that autotunes gets 240 s more: its autotuner compiles and times every configuration
    for each key twice, in the notebook's demo and in the grader's worker, whose kernel cache is the
    submission's own (the FlashAttention backward, two kernels of six configurations, was stopped
    at 240 s on a cold H100 beside three other gradings)."""
    def timed(path: Path) -> int:
        return sum(1 for p in registry.for_notebook(str(path)) if problem_mod.has_speed_grade(p) or problem_mod.is_measured(p))

    def autotunes(path: Path) -> bool:
        import nbformat

        return any("@triton.autotune" in "".join(cell.source) for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")

    return [pytest.param(path, marks=pytest.mark.timeout(240 * (max(1, timed(path)) + autotunes(path)))) for path in paths]


@pytest.mark.parametrize("path", _timed_params(TIMED_SOLUTIONS), ids=lambda p: p.stem)
def test_solution_earns_full_marks_on_this_gpu(path):
    _assert_full_marks(path)


@pytest.mark.parametrize("path", EXACT_SOLUTIONS, ids=lambda p: p.stem)
def test_exact_solution_earns_full_marks_on_this_gpu(path):
    _assert_full_marks(path)


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.stem)
def test_untouched_exercise_earns_zero_without_crashing(path):
    nb = _execute(path, allow_errors=True)
    graded = list(_graded_cells(nb))
    assert graded
    for grade_id, _, cell in graded:
        assert _points(cell) in (None, 0.0), f"{grade_id} earned points untouched"
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert all(e.ename in ("NameError", "NotImplementedError") for e in errors), [e.ename for e in errors]


