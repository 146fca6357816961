"""Every adversarial submission gets its verdict: on the CPU under the Triton interpreter in CI, and
on a GPU in the GPU run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from autograder import grading, registry

from .cases import cases, submission_files


def _grade(case, device, notebook_folder: str | None = None):
    """Grade as if from a notebook in ``notebook_folder`` (a fresh temporary folder by default), so
    that submissions which plant files beside "the notebook" never touch the repository."""
    problem = registry.get(case.problem)
    with tempfile.TemporaryDirectory() as scratch:
        previous = os.environ.get("PWD")
        os.environ["PWD"] = notebook_folder or scratch
        try:
            return grading.grade_source(problem, case.source, case.entry, device=device, timeout=case.timeout)
        finally:
            if previous is None:
                os.environ.pop("PWD", None)
            else:
                os.environ["PWD"] = previous


def _case(name, device="cpu"):
    return next(c for c in cases(device) if c.name == name)


def _explain(result) -> str:
    """The verdict with what each failed case said, so a wrong verdict on the GPU explains itself."""
    failed = [f"  {c.get('size')}: {c.get('message')}" for c in result.get("cases", []) if not c.get("passed")]
    cases = "\n".join(["failed cases:", *failed[:8]]) if failed else ""
    return f"{result['status']}: {result.get('message')}\n{cases}\n{result.get('traceback', '')}\n{(result.get('output') or '')[-1500:]}"


def test_every_submission_names_a_problem_a_device_and_a_function_it_defines():
    """Checked here for the GPU-only ones too, which the CPU run never grades."""
    found = {c.path: c for c in cases("cpu") + cases("cuda")}
    assert len(found) == len(submission_files())
    for case in found.values():
        registry.get(case.problem)
        assert case.devices and set(case.devices) <= {"cpu", "cuda"}, case.path
        assert case.expect, case.path
        defines = f"def {case.entry}(" in case.source or f"class {case.entry}" in case.source
        assert defines or case.name == "misspelled_function", f"{case.path} defines no {case.entry}"


# Cases whose CPU grading a second test reads (test_flooded_output_is_truncated,
# test_no_process_outlives_its_grading): one grading serves both, on one pytest-xdist worker.
READ_AGAIN = ("floods_output", "leaves_a_process")
_CPU_RESULTS: dict = {}


def _cpu_result(case) -> dict:
    if case.path not in _CPU_RESULTS:
        _CPU_RESULTS[case.path] = _grade(case, "cpu")
    return _CPU_RESULTS[case.path]


def _cpu_cases() -> list:
    """Each case, grouped with the test that reads its result again, and slow where its file says
    why its CPU grading adds nothing to ``make test`` (``# slow:``)."""
    return [
        pytest.param(c, id=c.name, marks=[*([pytest.mark.xdist_group(c.name)] if c.name in READ_AGAIN else []), *([pytest.mark.slow] if c.slow else [])])
        for c in cases("cpu")
    ]


@pytest.mark.parametrize("case", _cpu_cases())
def test_verdict_on_cpu(case):
    result = _cpu_result(case)
    assert result["status"] in case.expect, _explain(result)
    _check_reason(case, result)
    if "PASS" not in case.expect:
        assert result["points"] == 0


def _check_reason(case, result: dict) -> None:
    """A case's ``# says:`` words appear in the verdict's message or in one of its cases'."""
    if case.says:
        said = "\n".join([str(result.get("message")), *(f"{'passed' if c.get('passed') else 'failed'} {c.get('size')}: {c.get('message')}" for c in result.get("cases", []))])
        assert case.says in said, f"the verdict is right but not its reason: expected {case.says!r} in\n{said}"


def _check_gpu_verdict(case) -> None:
    started = time.monotonic()
    result = _grade(case, "cuda")
    _keep_verdict(case, result, time.monotonic() - started)
    assert result["status"] in case.expect, _explain(result)
    if "cpu" not in case.devices:
        _check_reason(case, result)
    if result["status"] != "PASS":
        assert result["points"] == 0 or result["status"] == "NEEDS GPU"
    else:
        # Honest submissions are timed honestly: never below the physical floor.
        assert all(not row["below_floor"] for row in result["speed"]), result["speed"]
        if case.speed_at_most is not None:
            assert result["speed_metric"]["value"] <= case.speed_at_most, result["speed_metric"]


def _keep_verdict(case, result, seconds: float) -> None:
    """In the GPU run ($GPU_OUT set), each verdict and what it said is written as soon as it is known:
    a step cut off by its time limit prints no failure details, and the verdicts are read after."""
    out = os.environ.get("GPU_OUT")
    if out:
        folder = os.path.join(out, "verdicts")
        os.makedirs(folder, exist_ok=True)
        # What the speed was made of (each size's times, what was charged more, the windows), so a
        # verdict off by its speed is diagnosed from the record alone.
        speed = [{key: row.get(key) for key in ("size", "candidate", "library", "ratio", "calls_per_window", "charged_more", "segments_us", "unqueued_windows")} for row in result.get("speed") or []]
        # seconds: the grading's wall time beside the others of its step (where a shard's time goes).
        timing = {"seconds": round(seconds, 1), "speed_metric": result.get("speed_metric"), "graph": result.get("graph"), "speed": speed}
        with open(os.path.join(folder, f"{case.name.replace('/', '--')}.txt"), "w") as record:
            record.write(f"expected {' or '.join(case.expect)}\n{_explain(result)}\n{json.dumps(timing, default=str)}\n")


@pytest.mark.gpu
@pytest.mark.parametrize("case", cases("cuda", alone=False), ids=lambda c: c.name)
def test_verdict_on_gpu(case):
    _check_gpu_verdict(case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", cases("cuda", alone=True), ids=lambda c: c.name)
def test_alone_verdict_on_gpu(case):
    """Cases that load the GPU beyond their calls: run with the isolation tests, one at a time."""
    _check_gpu_verdict(case)


@pytest.mark.xdist_group("floods_output")
def test_flooded_output_is_truncated():
    result = _cpu_result(_case("floods_output"))
    assert result["status"] == "PASS"
    assert len(result["output"]) < 10_000
    assert "bytes of output left out" in result["output"]


@pytest.mark.gpu
def test_crash_does_not_cost_the_next_exercise():
    crash = _case("illegal_address", "cuda")
    honest = _case("honest_cupy", "cuda")
    assert _grade(crash, "cuda")["status"] == "ERROR"
    result = _grade(honest, "cuda")
    assert result["status"] == "PASS", _explain(result)
    assert result["correctness_points"] == registry.get("act0.saxpy").correctness_points
    assert len(result["speed"]) == len(registry.get("act0.saxpy").bench_sizes)


@pytest.mark.xdist_group("leaves_a_process")
def test_no_process_outlives_its_grading():
    assert _cpu_result(_case("leaves_a_process"))["status"] == "PASS"
    left = subprocess.run(["pgrep", "-f", "sleep 987654"], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"processes left behind: {left.stdout}"


def test_planted_files_do_not_reach_the_next_exercise(tmp_path):
    notebook_folder = tmp_path / "act0-start"
    notebook_folder.mkdir()
    planted = _grade(_case("plants_files"), "cpu", str(notebook_folder))
    # With Landlock the sandbox refuses the write; without it the file lands and must do no harm.
    sandboxed = "Landlock" in (planted.get("sandbox") or "")
    assert planted["status"] == ("ERROR" if sandboxed else "FAIL"), _explain(planted)
    assert (notebook_folder / "torch.py").exists() is not sandboxed
    result = _grade(_case("honest_triton"), "cpu", str(notebook_folder))
    assert result["status"] == "PASS", _explain(result)


@pytest.mark.gpu
def test_gpu_memory_is_back_after_a_leaking_exercise():
    import torch

    free_before, _ = torch.cuda.mem_get_info()
    _grade(_case("leaks_gpu_memory", "cuda"), "cuda")
    free_after, _ = torch.cuda.mem_get_info()
    assert free_after > free_before - (1 << 30)
    result = _grade(_case("honest_triton", "cuda"), "cuda")
    assert result["status"] == "PASS", _explain(result)


@pytest.mark.gpu
def test_gpu_is_free_after_an_endless_kernel():
    assert _grade(_case("infinite_kernel", "cuda"), "cuda")["status"] == "TIMEOUT"
    result = _grade(_case("honest_cupy", "cuda"), "cuda")
    assert result["status"] == "PASS", _explain(result)


def test_another_gradings_files_are_unreadable():
    """Every judge's folder is made in one root, hidden from the workers as a whole: a learner's code
    read the submission of another grading running beside it (and other judges' logs)."""
    from autograder import sandbox

    other = tempfile.mkdtemp(prefix="autograder-", dir=sandbox.gradings_root())
    try:
        os.makedirs(os.path.join(other, "learner"))
        planted = os.path.join(other, "learner", "submission.py")
        with open(planted, "w") as submission:
            submission.write("SECRET = 'another learner wrote this'\n")
        spy = _case("honest_triton").source.replace(
            "def vector_add(x, y):",
            f"try:\n    print('SPY', open({planted!r}).read())\nexcept OSError as refused:\n    print('SPY refused', refused.errno)\n\n\ndef vector_add(x, y):",
        )
        result = grading.grade_source(registry.get("act0.vector_add"), spy, "vector_add", device="cpu")
        assert result.get("sandbox", "").startswith("Landlock"), "this test needs a kernel with Landlock"
        assert result["status"] == "PASS", _explain(result)
        assert "another learner wrote this" not in (result.get("output") or "")
        assert "SPY refused 13" in (result.get("output") or ""), result.get("output")
    finally:
        shutil.rmtree(other, ignore_errors=True)
