"""What the judge says when the worker reports an exception of its own step: the grader's failure,
unless the traceback says the GPU context faulted, which only kernels launched in the process that
runs the learner's code do (seen on an H200: an SGEMM without edge masks, reported as "the grader
failed in the worker while call", results/runs/2026-11-29-h200-thirtieth-session/)."""

from __future__ import annotations

import pytest

from autograder import learner_code, wire
from autograder.session import Session, WorkerGone

TORCH_FAULT = """Traceback (most recent call last):
  File "autograder/canary.py", line 158, in settle
    torch.cuda.synchronize()
torch.AcceleratorError: CUDA error: an illegal memory access was encountered
Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""
CUPY_FAULT = """Traceback (most recent call last):
  File "autograder/shared.py", line 90, in describe_output
cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address
"""


def test_the_fault_is_found_in_pytorchs_and_cupys_words():
    assert learner_code.gpu_fault(TORCH_FAULT) == "CUDA error: an illegal memory access was encountered"
    assert learner_code.gpu_fault(CUPY_FAULT) == "cudaErrorMisalignedAddress: misaligned address"
    assert learner_code.gpu_fault("Traceback ...\nValueError: the output's description does not fit\n") is None


def test_a_fault_the_learners_call_raises_is_told_in_one_line_with_what_to_do():
    message = "CUDA error: an illegal memory access was encountered\nSearch for `cudaErrorIllegalAddress' in https://docs.nvidia.com\nCompile with `TORCH_USE_CUDA_DSA`"
    error = learner_code.error(RuntimeError(message), None)
    assert error["message"] == f"CUDA error: an illegal memory access was encountered: {learner_code.FAULT_HINT}"
    assert "AUTOGRADER_DEVICE=cpu" in error["message"]
    assert learner_code.error(ValueError("not a fault"), None)["message"] == "not a fault"


def _answer(monkeypatch, worker_error: str) -> WorkerGone:
    session = object.__new__(Session)
    session._from_worker, session._signatures = -1, None
    monkeypatch.setattr(wire, "receive", lambda *args: ({"worker_error": worker_error}, b""))
    with pytest.raises(WorkerGone) as gone:
        session.receive(5.0, "call")
    return gone.value


@pytest.mark.parametrize("trace", [TORCH_FAULT, CUPY_FAULT])
def test_a_gpu_fault_in_the_worker_is_not_called_the_graders_failure(monkeypatch, trace):
    gone = _answer(monkeypatch, trace)
    assert gone.status == "ERROR"
    assert "faulted on the GPU (seen while call)" in str(gone) and learner_code.gpu_fault(trace) in str(gone)
    assert "grader failed" not in str(gone)


def test_any_other_exception_of_the_worker_is_the_graders(monkeypatch):
    gone = _answer(monkeypatch, "Traceback ...\nKeyError: 'id'\n")
    assert gone.status == "ERROR" and str(gone) == "the grader failed in the worker while call: KeyError: 'id'"
