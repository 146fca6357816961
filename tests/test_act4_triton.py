"""Act 4's Triton exercises on a CPU, under the Triton interpreter: every reference solution passes at
the CPU sizes, the classic mistakes fail, and handing the work to PyTorch is rejected."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from autograder import grading, registry

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "act4-kernels"


def _solution_source(notebook: str) -> str:
    """The solution cell of a notebook, with nbgrader's markers removed: a learner file."""
    nb = json.loads((SOLUTIONS / f"{notebook}.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(cells) == 1, f"{notebook}: expected one solution cell"
    text = "".join(cells[0]["source"])
    return re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", text + "\n", flags=re.MULTILINE)


def _grade(problem: str, code: str, entry: str) -> dict:
    return grading.grade_source(registry.get(problem), code, entry, device="cpu")


def _replace(code: str, old: str, new: str) -> str:
    assert old in code, f"the solution no longer contains {old!r}; update the test"
    return code.replace(old, new)


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("AUTOGRADER_DEVICE", "cpu")


@pytest.mark.parametrize(
    ("problem", "notebook", "entry"),
    [
        ("act4.softmax", "softmax", "softmax"),
        ("act4.matmul_bf16", "matmul", "matmul"),
        ("act4.matmul_fp16", "matmul", "matmul"),
        ("act4.flash_attention", "flash_attention", "flash_attention"),
    ],
)
def test_reference_solution_passes_on_cpu(problem, notebook, entry):
    result = _grade(problem, _solution_source(notebook), entry)
    assert result["status"] == "PASS", f"{result['status']}: {result.get('message')}\n{result.get('traceback', '')}"
    assert result["points"] == registry.get(problem).correctness_points
    assert "needs a GPU" in result["speed_note"]


def test_problem_definitions_are_consistent():
    for name in ("act4.softmax", "act4.matmul_bf16", "act4.matmul_fp16", "act4.flash_attention"):
        p = registry.get(name)
        assert p.notebook.startswith("act4-kernels/")
        assert p.cpu_test_sizes and all(p.size_label(s) for s in p.cpu_test_sizes)
    assert registry.get("act4.matmul_bf16").out_dtype == "bfloat16"
    assert registry.get("act4.matmul_fp16").compute_dtype == "float16"
    fa = registry.get("act4.flash_attention")
    assert fa.flops((1, 1, 128, 64, True)) == fa.flops((1, 1, 128, 64, False)) / 2
    # Sequence lengths that no block size divides are tested, both head dims, both masks.
    assert {s[2] for s in fa.test_sizes} >= {1, 17, 127, 129, 1000}
    assert {s[3] for s in fa.test_sizes} == {64, 128}
    assert {s[4] for s in fa.cpu_test_sizes} == {False, True}


def test_softmax_without_the_maximum_overflows_and_fails():
    code = _replace(_solution_source("softmax"), "x = x - tl.max(x, axis=0)", "x = x")
    assert _grade("act4.softmax", code, "softmax")["status"] == "FAIL"


def test_softmax_without_the_column_mask_fails():
    code = _solution_source("softmax")
    code = _replace(code, "mask=mask, other=-float(\"inf\")", "mask=cols < BLOCK_SIZE, other=-float(\"inf\")")
    assert _grade("act4.softmax", code, "softmax")["status"] in ("FAIL", "ERROR")


def test_softmax_by_torch_is_rejected():
    code = "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n"
    result = _grade("act4.softmax", code, "softmax")
    assert result["status"] == "REJECT" and result["points"] == 0


def test_matmul_without_the_k_mask_fails():
    code = _solution_source("matmul")
    code = _replace(code, "a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)", "a = tl.load(a_ptrs)")
    code = _replace(code, "b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)", "b = tl.load(b_ptrs)")
    assert _grade("act4.matmul_bf16", code, "matmul")["status"] in ("FAIL", "ERROR")


def test_matmul_by_torch_is_rejected():
    code = "import torch\n\n\ndef matmul(a, b):\n    return torch.matmul(a, b)\n"
    result = _grade("act4.matmul_fp16", code, "matmul")
    assert result["status"] == "REJECT" and result["points"] == 0


def test_attention_without_the_causal_mask_fails():
    code = _replace(_solution_source("flash_attention"), "BLOCK_N, True, True,", "BLOCK_N, False, True,")
    assert _grade("act4.flash_attention", code, "flash_attention")["status"] == "FAIL"


def test_attention_that_drops_the_last_partial_block_fails():
    # Only whole tiles of keys: a sequence of 129 loses its last column (and 17 loses all of them).
    code = _replace(_solution_source("flash_attention"), "full, S, BLOCK_N, False, True,", "full, full, BLOCK_N, False, True,")
    code = _replace(code, "tl.minimum((start_m + 1) * BLOCK_M, S)", "tl.minimum((start_m + 1) * BLOCK_M, (S // BLOCK_N) * BLOCK_N)")
    assert _grade("act4.flash_attention", code, "flash_attention")["status"] in ("FAIL", "ERROR")


def test_attention_by_sdpa_is_rejected():
    code = (
        "import torch.nn.functional as F\n\n\n"
        "def flash_attention(q, k, v, causal):\n"
        "    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)\n"
    )
    result = _grade("act4.flash_attention", code, "flash_attention")
    assert result["status"] == "REJECT" and result["points"] == 0


def test_interpreter_bf16_dot_is_fixed():
    """The interpreter's tl.dot multiplies bf16 bit patterns unless autograder.interpreter patches it."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs the interpreter")
    from autograder.interpreter import patch_bf16_dot

    assert patch_bf16_dot()
