"""On a GPU: the judge reads a worker's outputs through the IPC handles the worker gives
(autograder.shared.OutputReader). An allocation made where a freed one was gets a handle of its own
and is read as it is now; an output freed before the judge reads it is the learner's error, not the
grader's failure (tests/gpu/probe_ipc_reuse.py shows the driver's side of both)."""

from __future__ import annotations

import pytest
import torch
import torch.multiprocessing as mp

from autograder import shared
from autograder.session import WorkerGone
from tests.gpu.probe_ipc_reuse import exporter

pytestmark = pytest.mark.gpu


@pytest.fixture
def worker():
    """A process in the worker's role: ("alloc", name, fill, "torch" or "cupy") answers its
    allocation's handle, ("free", name) gives the memory back to the driver."""
    parent, child = mp.get_context("spawn").Pipe()
    process = mp.get_context("spawn").Process(target=exporter, args=(child,))
    process.start()

    def ask(*command):
        parent.send(command)
        answer = parent.recv()
        assert "error" not in answer, answer
        return answer

    yield ask
    ask("stop")
    process.join(30)


def _meta(exported: dict) -> dict:
    return {"handle": exported["handle"], "offset": exported["offset"], "dtype": shared.dtype_name(torch.float32), "shape": [1], "strides": [1]}


def test_memory_made_again_where_an_output_was_freed_is_read_as_it_is_now(worker):
    torch.cuda.init()
    reader = shared.OutputReader()
    try:
        first = worker("alloc", "a", 1.0, "cupy")
        assert reader.view(_meta(first)).item() == 1.0
        worker("free", "a")
        second = worker("alloc", "b", 2.0, "cupy")
        # CuPy's pool, emptied, asks the driver again and gets the same address.
        assert second["base"] == first["base"], "the second allocation is not where the first was"
        assert second["buffer_id"] != first["buffer_id"]
        assert second["handle"] != first["handle"], "the new allocation was described by the freed one's handle"
        assert reader.view(_meta(second)).item() == 2.0
    finally:
        reader.close()


def test_an_output_freed_before_the_judge_reads_it_is_the_learners_error(worker):
    torch.cuda.init()
    reader = shared.OutputReader()
    exported = worker("alloc", "a", 1.0, "torch")
    worker("free", "a")
    with pytest.raises(WorkerGone, match="could not read your output"):
        reader.view(_meta(exported))
    reader.close()
