"""The judge's and the worker's CUDA driver calls (autograder.cuda_driver) without a GPU: their
constants are cuda.h's, an IPC handle is cached per allocation (not per address), and an output the
judge cannot map is reported as the learner's error."""

from __future__ import annotations

import glob
import os
import re

import pytest

from autograder import cuda_driver, shared
from autograder.session import WorkerGone


def _cuda_h() -> str | None:
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"))]
    for root in roots:
        path = os.path.join(root, "include", "cuda.h")
        if root and os.path.exists(path):
            return path
    return None


@pytest.mark.skipif(_cuda_h() is None, reason="no CUDA toolkit header on this machine")
@pytest.mark.parametrize("name", ["CU_POINTER_ATTRIBUTE_BUFFER_ID", "CU_STREAM_WAIT_VALUE_GEQ", "CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS"])
def test_the_driver_constants_are_cuda_hs(name):
    with open(_cuda_h()) as f:
        header = f.read()
    value = re.search(rf"\b{name}\s*=\s*(0x[0-9a-fA-F]+|\d+)", header)
    assert value is not None, f"{name} is not in cuda.h"
    assert getattr(cuda_driver, name) == int(value.group(1), 0), f"cuda_driver.{name} is not cuda.h's value"


def test_an_allocation_made_where_one_was_freed_gets_a_handle_of_its_own(monkeypatch):
    asked = []

    class Driver:
        def cuIpcGetMemHandle(self, handle, base):
            asked.append(base)
            handle._obj.reserved[0] = len(asked)
            return 0

    ids = iter([1, 1, 2])
    monkeypatch.setattr(cuda_driver, "_driver", Driver)
    monkeypatch.setattr(cuda_driver, "buffer_id", lambda base: next(ids))
    monkeypatch.setattr(cuda_driver, "_HANDLES", {})
    first, again, after_a_free = (cuda_driver.ipc_handle(0x7000_0000) for _ in range(3))
    assert first == again, "the same allocation asks the driver again"
    assert after_a_free != first, "a new allocation at the same address kept the freed one's handle"
    assert asked == [0x7000_0000, 0x7000_0000]


def test_an_output_the_judge_cannot_map_is_the_learners_error(monkeypatch):
    def freed(handle):
        raise cuda_driver.CudaError("cuIpcOpenMemHandle failed with CUDA driver error 1")

    monkeypatch.setattr(cuda_driver, "ipc_open", freed)
    meta = {"handle": "ab" * cuda_driver.IPC_HANDLE_BYTES, "offset": 0, "dtype": "float32", "shape": [4], "strides": [1]}
    with pytest.raises(WorkerGone, match="could not read your output") as gone:
        shared.OutputReader().view(meta)
    assert gone.value.status == "ERROR"


def test_an_output_description_that_does_not_hold_is_the_learners_error():
    import pytest

    from autograder import shared, wire

    with pytest.raises(wire.WorkerGone) as gone:
        shared.output_from_bytes({"dtype": "float32", "shape": [4]}, b"123")
    assert gone.value.status == "ERROR" and "your output" in str(gone.value) and "grader failed" not in str(gone.value)
