"""On a GPU: the memory CuPy code allocates during a correctness case is the grader's guarded
memory, so an unwritten CuPy output reads as NaN and a store past its end is seen."""

from __future__ import annotations

import pytest
import torch

from autograder import arrays, canary

pytestmark = pytest.mark.gpu

N = 1000


def _cupy_output(blocks: canary.GuardedBlocks):
    import cupy

    with canary.cupy_allocates_from(blocks):
        return cupy.empty(N, dtype=cupy.float32)


def test_an_unwritten_cupy_output_reads_as_nan():
    blocks = canary.GuardedBlocks("cuda")
    out = arrays.from_learner(_cupy_output(blocks), "cupy")
    assert bool(torch.isnan(out).all())
    assert blocks.wrote_past_the_end(out) is False


def test_a_store_past_the_end_of_a_cupy_output_is_seen():
    import cupy

    blocks = canary.GuardedBlocks("cuda")
    out = _cupy_output(blocks)
    out.fill(1.0)
    assert blocks.wrote_past_the_end(arrays.from_learner(out, "cupy")) is False
    # What a grid with no tail mask does: one element more than the output holds.
    cupy.ndarray((N + 1,), dtype=cupy.float32, memptr=out.data).fill(1.0)
    cupy.cuda.Device().synchronize()
    assert blocks.wrote_past_the_end(arrays.from_learner(out, "cupy")) is True


def test_cupy_allocations_outside_a_case_are_cupys_own():
    import cupy

    blocks = canary.GuardedBlocks("cuda")
    with canary.cupy_allocates_from(blocks):
        pass
    out = arrays.from_learner(cupy.empty(N, dtype=cupy.float32), "cupy")
    assert blocks.wrote_past_the_end(out) is None
