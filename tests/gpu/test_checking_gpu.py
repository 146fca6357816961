"""On a GPU: the canary the checker leaves in freed memory lies under CuPy outputs as well as torch's."""

from __future__ import annotations

import pytest
import torch

from autograder import arrays, checking

pytestmark = pytest.mark.gpu

N = 1000  # 4,000 bytes: a 4,096-byte block, so 96 spare bytes after the last element


def test_an_unwritten_cupy_output_reads_as_the_canary():
    import cupy

    poisoned = checking.poison(N, torch.float32, "cuda")
    with arrays.learner_allocations("cupy"):
        out = cupy.empty(N, dtype=cupy.float32)
    tensor = arrays.from_learner(out, "cupy")
    assert tensor.data_ptr() == poisoned.ptr
    assert bool(torch.isnan(tensor).all())
    assert not checking.wrote_past_the_end(tensor, poisoned)


def test_a_store_past_the_end_of_a_cupy_output_is_seen():
    import cupy

    poisoned = checking.poison(N, torch.float32, "cuda")
    with arrays.learner_allocations("cupy"):
        out = cupy.empty(N, dtype=cupy.float32)
    # What a grid with no tail mask does: one more element than the output holds.
    cupy.ndarray((N + 1,), dtype=cupy.float32, memptr=out.data).fill(1.0)
    cupy.cuda.Device().synchronize()
    assert checking.wrote_past_the_end(arrays.from_learner(out, "cupy"), poisoned)


def test_cupy_memory_goes_back_to_torch_when_dropped():
    import cupy

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    with arrays.learner_allocations("cupy"):
        out = cupy.ones(1 << 20, dtype=cupy.float32)
        assert torch.cuda.memory_allocated() >= before + (4 << 20)
    del out
    assert torch.cuda.memory_allocated() == before
