"""The GPU run shares the GPU only among notebooks that time nothing: a solution notebook whose
exercise is timed, or measured against the grader's own timings, must run in the serial step."""

from __future__ import annotations

from autograder import problem as problem_mod
from autograder import registry
from tests.gpu import test_notebooks_gpu as gpu_notebooks


def test_every_solution_notebook_runs_in_exactly_one_step():
    timed, exact = set(gpu_notebooks.TIMED_SOLUTIONS), set(gpu_notebooks.EXACT_SOLUTIONS)
    assert not timed & exact
    assert timed | exact == set(gpu_notebooks.SOLUTIONS)


def test_notebooks_that_share_the_gpu_time_nothing():
    assert gpu_notebooks.EXACT_SOLUTIONS, "no solution notebook has only exact answers"
    for path in gpu_notebooks.EXACT_SOLUTIONS:
        for p in registry.for_notebook(str(path)):
            assert not problem_mod.has_speed_grade(p) and not problem_mod.is_measured(p), f"{path.name}: {p.name} is timed"


def test_every_timed_exercise_is_in_the_serial_step():
    serial = {str(p) for p in gpu_notebooks.TIMED_SOLUTIONS}
    for p in registry.all_problems():
        if problem_mod.has_speed_grade(p) or problem_mod.is_measured(p):
            assert any(path.endswith(f"{p.notebook}.ipynb") for path in serial), p.name


def test_workers_spread_round_robin_over_the_gpus():
    from tests.conftest import gpu_for_worker

    assert [gpu_for_worker(f"gw{i}", "0,1,2,3") for i in range(6)] == ["0", "1", "2", "3", "0", "1"]
    assert gpu_for_worker("gw5", "0") == "0"
    assert gpu_for_worker("gw1", " 2, 5 ") == "5"


def test_the_tests_that_load_every_core_run_only_in_their_own_step():
    """Processes spinning on every core would stretch the other tracks' timings: tests named
    busy_host run in run.sh's "busy" step alone, never with the solutions."""
    import re
    from pathlib import Path

    script = (Path(__file__).resolve().parent / "gpu" / "run.sh").read_text()
    solutions = next(line for line in script.splitlines() if line.startswith("has solutions && step pytest-gpu "))
    busy = next(line for line in script.splitlines() if line.startswith("has busy && step "))
    assert "not busy_host" in solutions and re.search(r"-k busy_host\b", busy)
    busy_tests = [name for path in (Path(__file__).resolve().parent / "gpu").glob("test_*.py") for name in re.findall(r"^def (test_\w*busy_host\w*)", path.read_text(), re.M)]
    assert busy_tests, "no test is named busy_host"


def test_a_signal_to_the_notebook_runner_is_kept_with_the_kernels_output(tmp_path, monkeypatch):
    """nbclient shuts its kernel down when the process running the notebook receives SIGTERM, and the
    test goes on: the GPU run keeps that signal with the processes then running, the kernel's own
    output and the error beside the notebook (two notebooks of one GPU run failed so, no reason kept)."""
    import nbformat
    import pytest

    folder = tmp_path / "act" / "demo"
    folder.mkdir(parents=True)
    path = folder / "signalled.ipynb"
    cell = "import os, signal, time\nos.write(2, b'the kernel ran\\n')\nos.kill(os.getppid(), signal.SIGTERM)\ntime.sleep(60)"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)]), path)
    monkeypatch.setenv("GPU_OUT", str(tmp_path / "out"))
    with pytest.raises(Exception):  # noqa: B017 -- nbclient's DeadKernelError, or its own cleanup's assertion
        gpu_notebooks._execute(path, allow_errors=False)
    kept = tmp_path / "out" / "notebooks"
    assert "SIGTERM reached pytest" in (signals := (kept / "act-demo-signalled.ipynb.signals.txt").read_text())
    assert ": a signal\n" in signals
    assert "the kernel ran" in (kept / "act-demo-signalled.ipynb.kernel.log").read_text()
    assert "Kernel died" in (kept / "act-demo-signalled.ipynb.error.txt").read_text()


def test_a_timeout_above_the_runner_is_named_only_when_its_own_limit_has_run_out(monkeypatch):
    """A CI runner's ``timeout -k 30 90m`` above the tests was read as a 30 s limit, and a signal the
    test sent itself was put down to it: the limit is the DURATION word, options' values skipped."""
    assert gpu_notebooks._timeout_limit("timeout -k 30 90m make test".split()) == 5400
    assert gpu_notebooks._timeout_limit("/usr/bin/timeout --signal KILL 2.5h x".split()) == 9000
    assert gpu_notebooks._timeout_limit("timeout --foreground 480 pytest".split()) == 480
    assert gpu_notebooks._timeout_limit("timeoutx 30 y".split()) is None
    assert gpu_notebooks._timeout_limit("timeout --kill-after=5 40s y".split()) == 40
    me, parent = 4242, 4000
    monkeypatch.setattr(gpu_notebooks.os, "getpid", lambda: me)

    def ps(elapsed: int, args: str) -> str:
        return f"PID PPID PGID SID ELAPSED COMMAND\n{parent} 1 {parent} {parent} {elapsed} {args}\n{me} {parent} {parent} {parent} 3 python -m pytest\n"

    assert gpu_notebooks._expired_limit(ps(600, "timeout -k 30 90m make test")) == ""
    assert "`timeout 480` (process 4000), which has run its 480 s" in gpu_notebooks._expired_limit(ps(480, "timeout 480 pytest"))
    assert gpu_notebooks._expired_limit(ps(100, "timeout 480 pytest")) == ""
