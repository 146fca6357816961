"""Exercise 3.5: the snapshot reader's cases and their traps, the memory judge's checks on made-up
measurements, the sandbox that keeps a measured step's memory where the judge sees it (seccomp,
Landlock on clear_refs, the judge's own reading of /proc), and whole gradings of the notebook's
solution and the untouched exercise. The cheats are graded with the other adversarial submissions
(autograder/problems/act3/submissions/lean_step_*.py, snapshot_peak/submissions/)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from autograder import exact, grading, memory_judge, registry, rss
from autograder.problems.act3 import snapshots

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = registry.get("act3.snapshot_peak")
LEAN = registry.get("act3.lean_step")
LINUX_X86 = sys.platform.startswith("linux") and platform.machine() == "x86_64"


def _cells(folder: str, grade_ids: tuple[str, ...]) -> str:
    notebook = json.loads((ROOT / folder / "act3-profiling" / "memory.ipynb").read_text())
    return "\n\n".join("".join(c["source"]) for c in notebook["cells"] if c["metadata"]["nbgrader"]["grade_id"] in grade_ids)


def _solution() -> dict:
    namespace: dict = {}
    exec(_cells("solutions", ("snapshot_solution", "lean_solution")), namespace)
    return namespace


# --- 3.5, first part: the peak of a snapshot --------------------------------------------------------


def test_the_solution_reads_every_snapshot_as_the_grader_does():
    solution = _solution()["peak_from_snapshot"]
    for seed in range(5):
        cases = exact.check_cases(SNAPSHOT, solution, seed=seed)
        assert all(c["passed"] for c in cases), [c["message"] for c in cases if not c["passed"]]


def test_the_snapshots_hold_every_trap_of_a_real_one():
    cases = [c["snapshot"] for c in snapshots.snapshot_cases(7)]
    events = [e for s in cases for e in (s["device_traces"] or [[]])[0]]
    assert {e["action"] for e in events} >= {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_map", "segment_free", "snapshot", "oom"}
    assert {e["stream"] for e in events if e["action"] == "alloc"} == {snapshots.MAIN_STREAM, snapshots.SIDE_STREAM}
    # A free completed events after it was requested, with allocations in between.
    assert any(_delayed_frees(s["device_traces"][0]) for s in cases[3:])
    # Pre-existing memory both ways: freed before any alloc of its address, and only in the segments.
    assert any(_freed_before_allocated(s["device_traces"][0]) for s in cases[3:])
    trace = cases[4]["device_traces"][0]
    allocated = {e["addr"] for e in trace if e["action"] == "alloc"}
    assert any(b["state"] == "active_allocated" and b["address"] not in allocated for s in cases[4]["segments"] for b in s["blocks"])
    answers = [snapshots.peak_from_snapshot(s) for s in cases[:3]]
    assert [a["peak_index"] for a in answers] == [-1, -1, 0], "the edge cases: no trace, only frees of old blocks, a peak at the first event"


def _delayed_frees(trace: list) -> int:
    """How many frees complete more than one event after they were requested."""
    requested, delayed = {}, 0
    for index, event in enumerate(trace):
        if event["action"] == "free_requested":
            requested[event["addr"]] = index
        elif event["action"] == "free_completed" and index - requested.pop(event["addr"], index) > 1:
            delayed += 1
    return delayed


def _freed_before_allocated(trace: list) -> bool:
    allocated = set()
    for event in trace:
        if event["action"] == "alloc":
            allocated.add(event["addr"])
        elif event["action"] == "free_completed" and event["addr"] not in allocated:
            return True
    return False


# --- 3.5, second part: the judge's checks ------------------------------------------------------------


def _measured(peak_mb: float, scale: float = 1.0, missing=()) -> memory_judge.Measured:
    gradients = {"blocks.0.up.weight": np.full((4, 2), 0.5 * scale), "blocks.1.down.weight": np.full((2, 4), -2.0)}
    return memory_judge.Measured(peak=int(peak_mb * memory_judge.MB), how="test", loss=1.25, gradients=gradients, missing=list(missing))


def test_the_judge_names_the_worst_gradient_and_the_peak_fraction():
    plain = _measured(330)
    cases = {c["size"]: c for c in memory_judge.judge_step(LEAN, plain, _measured(62))}
    assert all(c["passed"] for c in cases.values()) and "19%" in cases["peak memory"]["message"]
    cases = {c["size"]: c for c in memory_judge.judge_step(LEAN, plain, _measured(200, scale=1.01))}
    assert not cases["gradients"]["passed"] and "blocks.0.up.weight" in cases["gradients"]["message"]
    assert not cases["peak memory"]["passed"] and "at most 40%" in cases["peak memory"]["message"]
    cases = {c["size"]: c for c in memory_judge.judge_step(LEAN, plain, _measured(20, missing=["blocks.0.up.weight"]))}
    assert "call backward" in cases["gradients"]["message"]


# --- The sandbox of a measured step ----------------------------------------------------------------


def _sandboxed(code: str) -> subprocess.CompletedProcess:
    script = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not LINUX_X86, reason="the seccomp filter is written for Linux on x86-64")
def test_the_filter_refuses_hidden_memory_and_children_but_not_threads_or_torch():
    proc = _sandboxed("""
        import ctypes, os, socket, threading
        import torch
        from autograder import seccomp
        print(seccomp.forbid_hidden_memory())
        for name, attempt in (("memfd", lambda: os.memfd_create("x")), ("fork", os.fork), ("pipe", os.pipe), ("socket", socket.socket)):
            try:
                attempt()
                print(name, "allowed")
            except OSError as exc:
                print(name, "refused", exc.errno)
        torch.set_num_threads(2)
        a = torch.randn(512, 512)
        done = []
        thread = threading.Thread(target=lambda: done.append(float((a @ a).sum())))
        thread.start()
        thread.join()
        print("torch in a thread", len(done))
    """)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "seccomp:" in out, out
    for name in ("memfd", "fork", "pipe", "socket"):
        assert f"{name} refused 1" in out, f"{name} must fail with EPERM under the filter:\n{out}"
    assert "torch in a thread 1" in out, out


def test_landlock_with_no_writable_folder_denies_resetting_the_peak():
    proc = _sandboxed("""
        from autograder import osguard
        took = osguard.confine([])
        if took.startswith("no filesystem sandbox"):
            print("skip", took)
        else:
            try:
                open("/proc/self/clear_refs", "w").write("5")
                print("reset allowed")
            except PermissionError:
                print("reset denied")
    """)
    if proc.stdout.startswith("skip"):
        pytest.skip(proc.stdout)
    assert "reset denied" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_judge_resets_and_reads_another_process_peak():
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nx = bytearray(64 << 20)\ndel x\nsys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        time.sleep(1.0)
        before = rss.status(child.pid)
        assert before["VmHWM"] >= before["VmRSS"] + (48 << 20), before
        assert rss.reset_peak(child.pid)
        after = rss.status(child.pid)
        assert after["VmHWM"] < before["VmHWM"] - (32 << 20), after
        assert rss.threads(child.pid) >= 1
    finally:
        child.kill()
        child.wait()


# --- Whole gradings ---------------------------------------------------------------------------------


def test_the_solution_passes_and_the_untouched_exercise_gets_nothing():
    solution = _cells("solutions", ("lean_solution",))
    result = grading.grade_source(LEAN, solution, "lean_training_step", device="cpu")
    assert result["status"] == "PASS", result
    peak = next(c for c in result["cases"] if c["size"] == "peak memory")
    assert "of the plain step's" in peak["message"]
    untouched = _cells("exercises", ("lean_solution",))
    result = grading.grade_source(LEAN, untouched, "lean_training_step", device="cpu")
    assert result["points"] == 0 and "NotImplementedError" in result["message"], result


def test_a_home_without_matplotlib_settings_grades_the_memory_step(tmp_path):
    """Workers are sealed with matplotlib loaded. In a home with no ~/.config/matplotlib yet (the
    sandbox keeps home read-only) and in a memory step's worker, which may write nowhere, matplotlib
    raised OSError as it loaded: the worker exited while starting, and four lean_step cases read
    ERROR on a fresh GPU machine. Graded in a process of its own, so that home is the empty one."""
    code = (ROOT / "autograder" / "problems" / "act3" / "submissions" / "lean_step_no_backward.py").read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path)
    script = (
        "import json, sys\nfrom autograder import grading, registry\n"
        "r = grading.grade_source(registry.get('act3.lean_step'), sys.stdin.read(), 'lean_training_step', device='cpu')\n"
        "print(json.dumps({'status': r['status'], 'message': r.get('message'), 'cases': [c.get('message') for c in r.get('cases', [])]}))"
    )
    done = subprocess.run([sys.executable, "-c", script], input=code, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "FAIL" and "have no gradient after your step" in result["cases"][0], result


def test_a_worker_that_fails_while_starting_leaves_its_traceback(tmp_path):
    """A memory harness asked of a problem that has no model fails inside the worker's start: the
    worker prints the traceback to its log and exits 3, where it used to exit 0 and say nothing.
    In a process of its own, where no other grading's clean-up can collect the worker's status."""
    log = tmp_path / "output.log"
    script = textwrap.dedent(f"""
        from autograder.session import Session, WorkerGone
        session = Session("learner", "cpu", {str(tmp_path)!r}, {str(log)!r})
        setup = {{"language": "python", "module": {str(tmp_path / "absent.py")!r}, "entry": "f", "problem": "act0.vector_add", "kind": "memory", "writable": [], "memory_seed": 1}}
        session.configure(setup, start_timeout=60)
        try:
            session.wait_ready()
        except WorkerGone as gone:
            print(gone)
        session.end()
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "exited with code 3 while starting" in done.stdout, done.stdout + done.stderr
    assert "Traceback" in log.read_text() and "make_model" in log.read_text()
