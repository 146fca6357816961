"""Every speed baseline is labelled with what really ran on the device, decided on that device."""

from __future__ import annotations

import warnings

import pytest
import torch

from autograder import problem as problem_mod
from autograder import registry, report, verdict
from autograder.problems import baselines
from autograder.problems.act4.flash_attention import reference as attention

ATTENTION = registry.get("act4.flash_attention")
DIMS = attention.HEAD_DIMS


@pytest.fixture
def no_flash(monkeypatch):
    """A device on which SDPA's flash backend refuses (a T4, a build without it); every other backend
    is really tried."""
    real = baselines._sdpa_runs
    monkeypatch.setattr(baselines, "_sdpa_runs", lambda backend, *rest: backend != "FLASH_ATTENTION" and real(backend, *rest))


def _qkv(seed=0):
    inputs = attention.make_inputs((1, 2, 33, 64, True), seed, "cpu")
    return inputs["q"], inputs["k"], inputs["v"]


def test_where_the_flash_backend_runs_it_is_the_graded_baseline():
    baseline = ATTENTION.baseline_for("cpu")  # torch's CPU flash kernel
    assert baseline.label == "SDPA flash backend" == ATTENTION.library_name
    assert baseline.speed_scale == ATTENTION.speed_scale and not baseline.note
    assert baseline.extra_libraries == ()  # cuDNN's attention does not run on a CPU


def test_without_the_flash_backend_the_baseline_says_what_ran_and_is_not_graded(no_flash):
    baseline = attention.baseline("cpu")
    # On a CPU SDPA has no memory-efficient kernel either, so the math backend is what runs.
    assert baseline.label == "SDPA math backend (no flash backend here)"
    assert baseline.speed_scale is None
    assert "flash backend does not run on this CPU" in baseline.note and "not graded" in baseline.note
    q, k, v = _qkv()
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.equal(baseline.run(q, k, v, True), expected)
    assert torch.equal(attention.library(q, k, v, True), expected)


def test_a_backend_that_cannot_run_raises_instead_of_running_another():
    q, k, v = _qkv()
    with pytest.raises(RuntimeError):
        baselines.sdpa("CUDNN_ATTENTION")(q, k, v, False)  # the old baseline ran the math backend here
    assert not baselines.sdpa_runs("CUDNN_ATTENTION", "cpu", DIMS)
    assert baselines.sdpa_runs("MATH", "cpu", DIMS)


def test_trying_a_backend_leaves_stderr_clean(recwarn, capfd):
    baselines._sdpa_runs.cache_clear()
    assert not baselines.sdpa_runs("EFFICIENT_ATTENTION", "cpu", DIMS)
    assert not [w for w in recwarn if "sdp" in str(w.message).lower() or "kernel" in str(w.message).lower()]
    assert capfd.readouterr().err == ""


def test_device_spellings_share_one_decision():
    assert baselines.device_key("cpu") == baselines.device_key(torch.device("cpu")) == "cpu"


def test_every_other_problem_keeps_its_one_baseline_everywhere():
    for problem in registry.all_problems():
        if not problem_mod.has_speed_grade(problem) or problem.baseline is not None:
            continue
        baseline = problem.baseline_for("cpu")
        assert (baseline.label, baseline.run, baseline.speed_scale) == (problem.library_name, problem.library, problem.speed_scale)


def test_tf32_stays_off_in_the_fp32_baselines_whatever_the_learner_set():
    from autograder.problems.act4 import matmul as act4_matmul

    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    try:
        seen = []
        original = torch.matmul

        def spy(a, b):
            seen.append(matmul.fp32_precision)
            return original(a, b)

        torch.matmul = spy
        try:
            act4_matmul.sgemm_library(torch.ones(2, 2), torch.ones(2, 2))
        finally:
            torch.matmul = original
        assert seen == ["ieee"] and matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = previous


def test_report_names_the_baseline_that_ran_and_why_it_is_not_graded():
    from test_scoring import VECTOR_ADD, _result, _row

    result = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 0.9)]), "cuda")
    assert "torch.add (ms)" in report.text(result)
    result["baseline"] = {"label": "another library", "note": "why this one is shown, not graded"}
    text = report.text(result)
    assert "another library (ms)" in text and "torch.add" not in text
    assert "why this one is shown, not graded" in text


def test_report_names_the_ceiling_that_caps_a_dtype_without_its_own():
    t4 = {"copy": {"bytes_per_s": 3e11}, "matmul": {"float32": {"flop_per_s": 8e12}, "float16": {"flop_per_s": 6.5e13}}}
    assert report.peak_name(t4, "bfloat16") == "float16 (no bfloat16 ceiling on this GPU)"
    assert report.peak_name(t4, "float16") == "float16"


def test_no_warning_leaks_from_choosing_the_attention_baseline():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attention.baseline("cpu")


def test_a_baseline_the_targets_were_not_set_against_earns_no_speed_points():
    from test_scoring import VECTOR_ADD, _result, _row

    graded = verdict.score(VECTOR_ADD, _result([_row(1 << 24, 0.9)]), "cuda")
    assert graded["speed_points"] > 0
    result = _result([_row(1 << 24, 0.9)])
    result["baseline"] = {"label": "SDPA math backend (no flash backend here)", "note": "shown, not graded", "graded": False}
    shown = verdict.score(VECTOR_ADD, result, "cuda")
    assert shown["status"] == "PASS" and shown["correctness_points"] == VECTOR_ADD.correctness_points
    assert shown["speed_points"] == 0 and shown["speed_note"] == "shown, not graded"
    assert "speed_metric" not in shown


def test_the_library_helper_runs_the_baseline_the_judge_labels():
    from autograder import library_helper

    module = library_helper.SOURCE.format(name="act4.flash_attention", names=["q", "k", "v", "causal"])
    assert "_baseline = _problem.baseline_for(" in module and "_baseline.run(" in module
    assert "enumerate(_baseline.extra_libraries)" in module


def test_the_attention_backward_baseline_is_the_flash_backward_alone_or_says_what_ran(no_flash):
    """The backward's baseline follows the forward's: where the flash backend does not run, autograd
    through the backend that does, its forward included, labelled as such and not graded."""
    from autograder.problems.act4.flash_attention_backward import reference as backward

    inputs = backward.make_inputs((1, 2, 33, 64, True), 0, "cpu")
    baseline = backward.baseline("cpu")
    assert baseline.label == "SDPA math backend, forward and backward by autograd (no flash backend here)"
    assert baseline.speed_scale is None and "not graded" in baseline.note and "includes a forward pass" in baseline.note
    leaves = [inputs[name].detach().requires_grad_() for name in ("q", "k", "v")]
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
    expected = torch.autograd.grad(out, leaves, inputs["do"])
    assert torch.equal(baseline.run(**inputs), expected[0])
    assert torch.equal(backward.library(**inputs), torch.stack(expected))
