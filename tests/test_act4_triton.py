"""Act 4's Triton exercises on a CPU, under the Triton interpreter: every reference solution passes at
the CPU sizes, and the problem definitions test what the kernels get wrong. The classic mistakes
(no row maximum, no mask on K or on the row, sums not rescaled, a second pass over the row, no
causal mask, the last key block dropped) and the library doing the work are submissions beside each
problem (autograder/problems/act4/<problem>/submissions/), graded by tests/adversarial on the CPU
and on a GPU."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from autograder import grading, registry

ROOT = Path(__file__).resolve().parent.parent
# Every Triton exercise of Act 4 the registry knows: a new problem folder is tested without editing this file.
TRITON = [p for p in registry.all_problems() if p.name.startswith("act4.") and p.language == "triton"]


def _solution_source(notebook: str) -> str:
    """The solution cell of a notebook, with nbgrader's markers removed: a learner file."""
    nb = json.loads((ROOT / "solutions" / f"{notebook}.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(cells) == 1, f"{notebook}: expected one solution cell"
    text = "".join(cells[0]["source"])
    return re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", text + "\n", flags=re.MULTILINE)


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("AUTOGRADER_DEVICE", "cpu")


def test_act4_has_its_triton_exercises():
    assert {p.name for p in TRITON} >= {
        "act4.softmax", "act4.matmul_bf16", "act4.matmul_fp16", "act4.online_softmax", "act4.flash_attention", "act4.flash_attention_causal",
    }


@pytest.mark.parametrize("problem", TRITON, ids=lambda p: p.name)
def test_reference_solution_passes_on_cpu(problem):
    result = grading.grade_source(problem, _solution_source(problem.notebook), problem.function, device="cpu")
    assert result["status"] == "PASS", f"{result['status']}: {result.get('message')}\n{result.get('traceback', '')}"
    assert result["points"] == problem.correctness_points
    assert "needs a GPU" in result["speed_note"]


@pytest.mark.parametrize("problem", TRITON, ids=lambda p: p.name)
def test_problem_definition_is_consistent(problem):
    assert problem.notebook.startswith("act4-kernels/")
    assert problem.cpu_test_sizes and all(problem.size_label(s) for s in problem.cpu_test_sizes)


def test_the_matmuls_and_attention_test_what_they_must():
    assert registry.get("act4.matmul_bf16").out_dtype == "bfloat16"
    assert registry.get("act4.matmul_fp16").compute_dtype == "float16"
    fa, causal = registry.get("act4.flash_attention"), registry.get("act4.flash_attention_causal")
    assert fa.flops((1, 1, 128, 64, True)) == fa.flops((1, 1, 128, 64, False)) / 2
    # Sequence lengths that no block size divides are tested, both head dims; each problem its own mask.
    assert {s[2] for s in fa.test_sizes} >= {1, 17, 127, 129, 1000}
    assert {s[3] for s in fa.test_sizes} == {64, 128}
    for problem, mask in ((fa, False), (causal, True)):
        assert {s[4] for s in [*problem.test_sizes, *problem.cpu_test_sizes, *problem.bench_sizes]} == {mask}
        assert {s[3] for s in problem.cpu_test_sizes} == {64, 128}
    # The same function and notebook, the same shapes and the same speed scale: only the mask differs.
    assert (fa.notebook, fa.function) == (causal.notebook, causal.function)
    assert [s[:4] for s in fa.test_sizes] == [s[:4] for s in causal.test_sizes]
    assert [s[:4] for s in fa.bench_sizes] == [s[:4] for s in causal.bench_sizes]
    assert fa.speed_scale == causal.speed_scale and fa.solution_target == causal.solution_target
    assert causal.baseline_for("cpu").speed_scale is causal.speed_scale


def test_the_attention_backward_tests_what_it_must():
    bw, fa = registry.get("act4.flash_attention_backward"), registry.get("act4.flash_attention")
    # Five matmuls to the forward's two, half of them under the mask; the minimum traffic: five bf16
    # tensors read, three written, L read in float32.
    size = (2, 3, 128, 64, False)
    assert bw.flops(size) == 2.5 * fa.flops(size) == 2 * bw.flops((*size[:4], True))
    assert bw.bytes_moved((1, 1, 10, 64, False)) == 8 * 10 * 64 * 2 + 10 * 4
    assert {s[2] for s in bw.test_sizes} >= {1, 17, 127, 129, 1000}
    for sizes in (bw.test_sizes, bw.cpu_test_sizes, bw.bench_sizes):
        assert {s[3] for s in sizes} == {64, 128} and {s[4] for s in sizes} == {False, True}
    assert (bw.out_dtype, bw.compute_dtype, bw.solution_target) == ("bfloat16", "bfloat16", 1.0)
    assert bw.speed_scale.metric.name == "library_ratio" and bw.speed_scale.full_at == fa.speed_scale.full_at


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_attention_backward_reference_is_the_float64_gradient(causal):
    import torch

    from autograder.problems.act4.flash_attention_backward import reference as backward

    p = registry.get("act4.flash_attention_backward")
    inputs = p.make_inputs((2, 2, 33, 64, causal), 3, "cpu")
    leaves = [inputs[name].double().requires_grad_() for name in ("q", "k", "v")]
    out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
    out.backward(inputs["do"].double())
    expected = torch.stack([leaf.grad for leaf in leaves])
    assert torch.allclose(p.reference(**inputs), expected, rtol=1e-9, atol=1e-12)
    # What the forward saved: O to bf16's rounding, L the logsumexp of each row of the scaled scores.
    assert inputs["o"].dtype == torch.bfloat16 and torch.allclose(inputs["o"].double(), out, rtol=2**-8, atol=1e-3)
    scores = leaves[0] @ leaves[1].transpose(-1, -2) / 8.0
    if causal:
        scores = scores.masked_fill(torch.ones(33, 33, dtype=torch.bool).triu(1), float("-inf"))
    assert inputs["lse"].dtype == torch.float32 and torch.allclose(inputs["lse"].double(), torch.logsumexp(scores, -1), atol=1e-5)
    # The library is the flash backward on a CPU too, stacked like the learner's output, and what the
    # helper times of it is the backward alone, handing back dQ.
    baseline = p.baseline_for("cpu")
    assert baseline.label == p.library_name and baseline.speed_scale is p.speed_scale and baseline.extra_libraries == ()
    library = p.library(**inputs)
    assert library.shape == (3, 2, 2, 33, 64) and library.dtype == torch.bfloat16
    assert (library.double() - expected).abs().max() < 0.05
    with torch.profiler.profile() as profile:
        timed = baseline.run(**inputs)
    assert torch.equal(timed, backward.flash_backward(**inputs)[0])
    ran = {event.name for event in profile.events()}
    assert "aten::_scaled_dot_product_flash_attention_for_cpu_backward" in ran
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" not in ran and "aten::stack" not in ran


def test_the_online_softmax_needs_one_pass_over_rows_longer_than_any_block():
    from triton.language import TRITON_MAX_TENSOR_NUMEL

    from autograder import launch_count

    p = registry.get("act4.online_softmax")
    # Some row of every size list is longer than the largest block Triton allows, on a CPU too.
    for sizes in (p.test_sizes, p.cpu_test_sizes):
        assert max(cols for _, cols in sizes) > TRITON_MAX_TENSOR_NUMEL
        assert {1, 127} <= {cols for _, cols in sizes}
    assert p.max_reads == 1 and p.bytes_moved((2, 10)) == 4 * (2 * 2 * 10 + 2)
    # The interpreter's count of each input's most loaded byte decides.
    once = {"launches": 1, "most_reads": {"x": 1, "v": 1}}
    assert launch_count.judge_cpu([once, once], None, p.max_reads) is None
    twice = launch_count.judge_cpu([once, {"launches": 1, "most_reads": {"x": 2, "v": 1}}], None, p.max_reads)
    assert not twice["ok"] and "loaded some elements of x 2 times" in twice["message"]
    assert launch_count.judge_cpu([{"launches": 1, "most_reads": {"x": 2}}], None, None) is None


def test_interpreter_bf16_dot_is_fixed():
    """The interpreter's tl.dot multiplies bf16 bit patterns unless autograder.interpreter patches it."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs the interpreter")
    from autograder.interpreter import patch_bf16_dot

    assert patch_bf16_dot()
