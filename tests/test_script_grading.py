"""Grading from a .py script with no ``if __name__ == "__main__":`` guard: the grading runs the
script's definitions only (never its top-level grade call), so it returns in seconds with the
kernel's verdict, and nothing it started is left running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from autograder import registry

SCRIPT = textwrap.dedent(
    '''
    import torch
    import triton
    import triton.language as tl

    import autograder

    autograder.setup()


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


    def vector_add(x, y):
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
        return out


    print("POINTS", autograder.grade_correctness("act0.vector_add", vector_add))
    '''
)


def _processes_with(marker: str) -> list[str]:
    """Command lines of the live processes whose environment carries ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="counts processes through /proc (Linux)")
def test_a_script_without_a_main_guard_is_graded_once_and_leaves_no_process(tmp_path):
    script = tmp_path / "my_vector_add.py"
    script.write_text(SCRIPT)
    marker = f"GPU_BRRR_TEST_MARKER={uuid.uuid4().hex}"
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    env[marker.split("=")[0]] = marker.split("=")[1]
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    # One grading, of the definitions: the kernel is correct, so it earns the correctness points.
    assert done.stdout.count("POINTS") == 1, done.stdout[-2000:]
    points = float(done.stdout.split("POINTS")[1].split()[0])
    assert points > 0, done.stdout[-2000:]
    assert "TIMEOUT" not in done.stdout
    assert seconds < 180
    time.sleep(1.0)
    assert _processes_with(marker) == []


def test_a_grade_call_inside_the_graded_code_is_refused_with_a_sentence():
    from autograder import grading

    code = textwrap.dedent(
        '''
        import torch

        import autograder


        def vector_add(x, y):
            points = autograder.grade_correctness("act0.vector_add", vector_add)
            return x + y if points else torch.zeros_like(x)
        '''
    )
    started = time.monotonic()
    result = grading.grade_source(registry.get("act0.vector_add"), code, "vector_add", device="cpu", speed=False)
    assert time.monotonic() - started < 120
    assert result["status"] == "FAIL", result
    assert "a grading cannot start inside a grading" in result["output"]


def test_a_judge_started_ahead_grades_the_next_submission_and_leaves_nothing(monkeypatch):
    """What a notebook's set-up does on a GPU (autograder.sandbox.keep_ready), here on the CPU: the
    judge and its workers start before the submission exists, and the grading uses them."""
    from autograder import grading, sandbox

    marker = uuid.uuid4().hex
    monkeypatch.setenv("GPU_BRRR_TEST_MARKER", marker)
    sandbox._start_ahead("cpu")
    ahead = sandbox._ready
    assert ahead is not None and ahead.usable("cpu")
    time.sleep(2.0)  # its workers start meanwhile
    code = SCRIPT.replace('print("POINTS", autograder.grade_correctness("act0.vector_add", vector_add))', "")
    result = grading.grade_source(registry.get("act0.vector_add"), code, "vector_add", device="cpu", speed=False)
    assert sandbox._ready is None, "the judge started ahead was used"
    assert ahead.process.poll() is not None
    assert result["status"] == "PASS", result.get("message")
    time.sleep(1.0)
    assert _processes_with(marker) == []


def test_a_judge_started_ahead_and_never_used_ends_with_its_workers(monkeypatch):
    from autograder import sandbox

    marker = uuid.uuid4().hex
    monkeypatch.setenv("GPU_BRRR_TEST_MARKER", marker)
    sandbox._start_ahead("cpu")
    time.sleep(2.0)
    assert _processes_with(marker), "the judge and its workers are running"
    sandbox._discard_ready()
    time.sleep(1.0)
    assert _processes_with(marker) == []


def test_a_worker_is_told_to_warm_its_profiler_in_its_first_message(tmp_path, monkeypatch):
    """The profiler's set-up must be asked for in the message the worker reads before it warms up:
    anything set on the session afterwards arrives too late."""
    from autograder import session as session_mod

    sent = []
    monkeypatch.setattr(session_mod.wire, "send", lambda fd, header, payload=b"": sent.append((dict(header), payload)))
    worker = session_mod.Session("learner", "cpu", str(tmp_path), str(tmp_path / "log"), warm_profiler=True)
    try:
        # With the key the worker signs its replies with (autograder.channel) as its payload.
        assert [header for header, _ in sent] == [{"role": "learner", "device": "cpu", "warm_profiler": True, "no_triton": False}]
        assert len(sent[0][1]) == 32
    finally:
        worker.end()
