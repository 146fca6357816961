"""Act 2's exact exercises: hand-checked values, wrong answers that must fail, and the checker's
messages."""

from __future__ import annotations

import pickle

import pytest

from autograder import exact, grading, registry
from autograder import problem as problem_mod
from autograder.problems.act2 import models as act2

EXACT = [p for p in registry.all_problems() if problem_mod.is_exact(p)]


def test_hand_checked_values():
    assert act2.matmul_cost(4096, 4096, 4096, 2) == {"flops": 137_438_953_472, "bytes": 100_663_296}
    assert act2.elementwise_cost(1 << 26, 4, 2, 1) == {"flops": 67_108_864, "bytes": 805_306_368}
    # Llama-3-8B shape (32 layers, 8 KV heads of 128), 8192 tokens in bf16: exactly 1 GiB.
    assert act2.kv_cache_bytes(32, 8, 128, 8192, 1, 2) == 1 << 30
    assert act2.naive_attention_cost(1, 1, 1, 64, 2, False) == {"flops": 4 * 64 + 5, "bytes": (4 * 64 + 4) * 2}
    causal = act2.flash_attention_cost(1, 1, 4, 8, 2, True)
    assert causal["flops"] == (4 * 8 + 5) * 10  # 4 + 3 + 2 + 1 query-key pairs
    assert act2.max_batch(141 * 10**9, 16 * 10**9, 32, 8, 128, 8192, 2) == 116
    assert act2.max_batch(16 * 10**9, 20 * 10**9, 32, 8, 128, 4096, 2) == 0
    assert act2.ridge_point(50.5e12, 4.141e12) == pytest.approx(12.195, rel=1e-4)
    assert act2.attainable_flops(1 / 12, 50.5e12, 4.141e12) == pytest.approx(4.141e12 / 12)
    assert act2.classify_regime(1e3, 12e3, 8e-6, 8.2e-6, 800e12, 4e12) == "overhead"
    assert act2.classify_regime(67e6, 805e6, 2e-4, 4e-4, 800e12, 4e12) == "memory"
    assert act2.classify_regime(1.1e12, 4e8, 1.4e-3, 2.8e-3, 800e12, 4e12) == "compute"
    assert act2.decode_tokens_per_s_bound(16e9, 1e9, 1, 4e12) == pytest.approx(4e12 / 17e9)


def _wrong_answers(problem):
    first = problem.make_cases(0)[0]
    yield "zero", lambda **kw: 0
    yield "one", lambda **kw: 1
    yield "the first argument", lambda **kw: kw[next(iter(first))]
    yield "another case's answer", lambda **kw: problem.reference(**first)
    if isinstance(problem.reference(**first), dict):
        yield "zeros in the right shape", lambda **kw: dict.fromkeys(problem.reference(**first), 0)
    if isinstance(problem.reference(**first), str):
        yield "always memory", lambda **kw: "memory"


@pytest.mark.parametrize("problem", EXACT, ids=lambda p: p.name)
def test_wrong_answers_fail(problem):
    for label, wrong in _wrong_answers(problem):
        cases = exact.check_cases(problem, wrong, seed=12345)
        assert not all(c["passed"] for c in cases), f"{label} passed every case of {problem.name}"


@pytest.mark.parametrize("problem", EXACT, ids=lambda p: p.name)
def test_cases_are_fresh_for_every_seed(problem):
    # Compared as bytes: cases may hold tensors, whose == is elementwise.
    assert pickle.dumps(problem.make_cases(1)) != pickle.dumps(problem.make_cases(2))


def test_mismatch_messages_say_where():
    assert exact.mismatch({"flops": 2, "bytes": 3}, {"flops": 2, "bytes": 4}, 1e-9) == "['bytes'] is 3, expected 4"
    assert "keys" in exact.mismatch({"flops": 2}, {"flops": 2, "bytes": 4}, 1e-9)
    assert exact.mismatch(True, 1, 1e-9) is not None
    assert exact.mismatch(1.0 + 1e-12, 1.0, 1e-9) is None
    assert exact.mismatch(1.001, 1.0, 1e-9) is not None
    assert exact.mismatch(float("nan"), 1.0, 1e-9) is not None
    assert exact.mismatch("compute", "memory", 1e-9) == "the answer is 'compute', expected 'memory'"


MATMUL = registry.get("act2.matmul_cost")


def test_a_wrong_submission_fails_in_the_child_with_the_first_difference():
    source = "def matmul_cost(m, n, k, dtype_bytes):\n    return {'flops': m * n * k, 'bytes': (m * k + k * n + m * n) * dtype_bytes}\n"
    result = grading.grade_source(MATMUL, source, "matmul_cost", device="cpu")
    assert result["status"] == "FAIL" and result["points"] == 0
    assert any("['flops']" in c["message"] for c in result["cases"])


def test_an_exception_fails_its_case_and_says_so():
    source = "def matmul_cost(m, n, k, dtype_bytes):\n    return {'flops': 2 * m * n * k, 'bytes': (m * k + k * n + m * n) * dtype_bytes // (m - 1)}\n"
    result = grading.grade_source(MATMUL, source, "matmul_cost", device="cpu")
    assert result["status"] == "FAIL"
    assert any("ZeroDivisionError" in c["message"] for c in result["cases"])


def test_borrowing_the_reference_is_rejected():
    source = "from autograder.problems import act2\n\ndef matmul_cost(m, n, k, dtype_bytes):\n    return act2.matmul_cost(m, n, k, dtype_bytes)\n"
    result = grading.grade_source(MATMUL, source, "matmul_cost", device="cpu")
    assert result["status"] == "REJECT" and result["points"] == 0


def test_the_reference_formula_written_by_a_learner_passes():
    source = "def matmul_cost(m, n, k, dtype_bytes):\n    return {'flops': 2 * m * n * k, 'bytes': dtype_bytes * (m * k + k * n + m * n)}\n"
    result = grading.grade_source(MATMUL, source, "matmul_cost", device="cpu")
    assert result["status"] == "PASS" and result["points"] == MATMUL.max_points
