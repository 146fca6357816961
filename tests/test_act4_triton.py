"""Act 4's Triton exercises on a CPU, under the Triton interpreter: every reference solution passes at
the CPU sizes, and the problem definitions test what the kernels get wrong. The classic mistakes
(no row maximum, no mask on K or on the row, no causal mask, the last key block dropped) and the
library doing the work are submissions beside each problem (autograder/problems/act4/<problem>/
submissions/), graded by tests/adversarial on the CPU and on a GPU."""

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
    assert {p.name for p in TRITON} >= {"act4.softmax", "act4.matmul_bf16", "act4.matmul_fp16", "act4.flash_attention"}


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
    fa = registry.get("act4.flash_attention")
    assert fa.flops((1, 1, 128, 64, True)) == fa.flops((1, 1, 128, 64, False)) / 2
    # Sequence lengths that no block size divides are tested, both head dims, both masks.
    assert {s[2] for s in fa.test_sizes} >= {1, 17, 127, 129, 1000}
    assert {s[3] for s in fa.test_sizes} == {64, 128}
    assert {s[4] for s in fa.cpu_test_sizes} == {False, True}


def test_interpreter_bf16_dot_is_fixed():
    """The interpreter's tl.dot multiplies bf16 bit patterns unless autograder.interpreter patches it."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs the interpreter")
    from autograder.interpreter import patch_bf16_dot

    assert patch_bf16_dot()
