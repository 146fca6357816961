"""Triton's front end on the kernels the interpreter runs (autograder.triton_frontend): an honest kernel
compiles for a GPU with no GPU here, one whose body computes with NumPy does not and the judge says
why, each kernel and specialization is compiled once, and the interpreter works on after it. The
kernels run in a fresh process (tests/frontend_kernels.py): the interpreter must be switched on
before Triton is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import honesty

ROOT = Path(__file__).resolve().parent.parent
# NumPy or a tensor's handle in a kernel: the front end refuses it before Triton's own error (the IR
# value has no NumPy array), autograder.kernel_python.
NOT_TRITON = "PythonOnATensor("


@pytest.fixture(scope="module")
def seen() -> dict:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "frontend_kernels.py")], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_honest_kernel_compiles_without_a_gpu(seen):
    assert seen["add"] is None
    # A jitted helper of the learner's and triton.language's own (tl.sum, x.sum(), tl.cdiv) compile
    # too, after the interpreter has run them.
    assert seen["after_the_interpreter"] == [None, None]
    assert seen["row_sum_recorded"] == {}


def test_a_kernel_that_inlines_a_library_function_is_library_work(seen):
    """Triton's front end compiles it, and autograder.own_compile says which function came from
    elsewhere; the honest kernels above, with helpers of their own file and triton.language's, are not
    flagged (the script installs the check for its own file)."""
    assert seen["library_callee"] == f"calls library_scale, {honesty.FOREIGN_CALLEE}"
    verdict = honesty.judge_cpu([], [{"kernels": ["calls_library_kernel"], "compile_errors": {"calls_library_kernel": seen["library_callee"]}}], {"calls_library_kernel"})
    assert not verdict["ok"]
    assert verdict["message"].startswith("your kernel calls_library_kernel calls library_scale, a Triton function from outside your code")


def test_a_kernel_that_computes_with_numpy_does_not_compile(seen):
    assert seen["numpy_add"].startswith("`x.handle.data = np.add(")
    assert NOT_TRITON in seen["numpy_add"]
    # Each specialization is compiled: NumPy behind a constexpr branch is found where it is taken.
    assert seen["numpy_when_big"][0] is None
    assert NOT_TRITON in seen["numpy_when_big"][1]
    assert seen["runtime_arange"] == "`offsets = tl.arange(0, n_elements)`: arange's arguments must be of type tl.constexpr"
    assert seen["not_bound"].startswith("TypeError: ")
    # A jitted function passed as a constexpr is compiled into the kernel, told apart by identity
    # from another of the same name.
    assert seen["activations"][0] is None
    assert "Unsupported function referenced: <ufunc 'maximum'>" in seen["activations"][1]


def test_each_kernel_and_specialization_is_compiled_once(seen):
    # The same launch again, and a length that differs only in its divisibility by 16: no compile.
    assert seen["cached"] == [[None, None, None], 0]
    # A length of 1 (a constexpr to Triton's JIT) and another block size: one compile each.
    assert seen["new_specializations"] == 2
    assert seen["cached_seconds"] < 0.05


def test_the_interpreter_runs_on_after_a_compile(seen):
    assert seen["row_sum_again"] is True
    assert seen["interpreting_again"] == ["InterpretedFunction", True]
    assert seen["right_answer"] is True


def test_the_front_end_costs_little(seen):
    # Measured on two CPU cores: about 0.1 s once per process, 10-20 ms for an add kernel.
    assert seen["warm_seconds"] < 5
    assert seen["add_seconds"] < 2


def test_the_call_summary_names_the_kernel_that_does_not_compile(seen):
    summary = seen["summary"]
    assert summary["kernels"] == ["add_kernel", "numpy_add_kernel"]
    assert list(summary["compile_errors"]) == ["numpy_add_kernel"]
    assert summary["output_stored"] and summary["output_is_what_was_stored"]


def _call(**extra) -> dict:
    return {"kernels": ["add_kernel"], "launches": 1, "output_stored": True, "output_is_what_was_stored": True, "inputs_read": {"x": 1.0, "y": 1.0}, **extra}


def test_the_judge_rejects_a_kernel_that_does_not_compile():
    reason = "`x.handle.data = np.add(x.handle.data, y.handle.data)`: AttributeError(\"'value' object has no attribute 'data'\")"
    verdict = honesty.judge_cpu([], [_call(), _call(compile_errors={"add_kernel": reason})], {"add_kernel"})
    assert not verdict["ok"]
    assert verdict["message"].startswith(f"your kernel add_kernel does not compile for a GPU: {reason}. Under the interpreter its body runs as Python")


def test_the_judge_passes_kernels_that_compile():
    assert honesty.judge_cpu([], [_call(compile_errors={}), _call()], {"add_kernel"})["ok"]
    assert "compiles each kernel with Triton's front end" in honesty.CPU_LIMITS
