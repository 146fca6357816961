"""On a GPU: the ceilings and the timing protocol measure what they claim."""

from __future__ import annotations

import dataclasses

import pytest

from autograder import ceilings, registry, timing

pytestmark = pytest.mark.gpu


def test_copy_bandwidth_is_measured_and_cached():
    entry = ceilings.load()
    assert 100e9 < ceilings.copy_bandwidth(entry) < 20e12
    assert ceilings.load() == entry
    assert entry["matmul"]["float32"]["flop_per_s"] > 1e12
    # Tensor-core rates exceed the plain fp32 rate on every GPU the course runs on (T4 and newer).
    assert entry["matmul"]["float16"]["flop_per_s"] > 2 * entry["matmul"]["float32"]["flop_per_s"]


def test_the_floor_is_the_slower_of_bytes_and_flops():
    entry = ceilings.load()
    problem = registry.get("act0.vector_add")
    n = 1 << 26
    assert timing.floor_ms(problem, n, entry) == pytest.approx(12 * n / ceilings.copy_bandwidth(entry) * 1e3)
    compute_bound = dataclasses.replace(problem, flops=lambda n: 1e6 * n)
    assert timing.floor_ms(compute_bound, n, entry) == pytest.approx(1e6 * n / ceilings.compute_peak(entry) * 1e3)


def test_the_library_timed_against_itself_is_a_ratio_of_one():
    problem = dataclasses.replace(registry.get("act0.vector_add"), language="python")
    result = timing.measure(problem, problem.library, 1 << 26, seed=11, entry=ceilings.load())
    assert result.wrong_timed_outputs == 0
    assert 0.9 < result.ratio < 1.1, result
    assert result.candidate.calls >= timing.MIN_CALLS
    assert result.candidate.stderr_ms < 0.05 * result.candidate.median_ms
    assert not timing.below_floor(result)


def test_work_on_a_side_stream_stays_inside_the_timer():
    import torch

    problem = dataclasses.replace(registry.get("act0.vector_add"), language="python")
    side = torch.cuda.Stream()

    def hidden(x, y):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out = x + y
            for _ in range(20):
                out.mul_(1.0)
        return out

    plain = timing.measure(problem, problem.library, 1 << 24, seed=5, entry=ceilings.load())
    sneaky = timing.measure(problem, hidden, 1 << 24, seed=6, entry=ceilings.load())
    # Twenty extra passes over the output: the timer must see several times the plain time.
    assert sneaky.candidate.median_ms > 5 * plain.candidate.median_ms


def test_persisting_l2_can_be_reset():
    assert timing._PersistingL2().available


def test_the_synchronisation_cost_is_small_and_measured():
    timer = timing.Timer()
    assert 0.0 < timer.sync_overhead_ms < 0.2


def _cross_window(timer, launches: int, held: bool):
    """One window of the cross-timer whose "worker" is a stream of this process that answers the go
    word at once, after a refill of ``launches`` one-element copies (host-bound to queue)."""
    import time

    import torch

    from autograder import cuda_driver

    worker = torch.cuda.Stream()
    source, target = torch.ones(launches, device="cuda"), torch.zeros(launches, device="cuda")

    def send(gate: int) -> None:
        cuda_driver.wait_value(worker, timer.flags.ptr, gate)
        cuda_driver.write_value(worker, timer.flags.ptr + 4, gate)

    def refill() -> None:
        for index in range(launches):
            target[index : index + 1].copy_(source[index : index + 1])

    started = time.perf_counter()
    raw, _, _ = timer.call(send=send, ready=lambda _: True, receive=dict, refill=refill, read=lambda _: [], deadline_s=30.0, held=held)
    torch.cuda.synchronize()
    assert bool(target.eq(1).all())
    return raw, (time.perf_counter() - started) * 1e6


def test_the_judges_preparation_is_timed_at_the_gpus_pace():
    """Queued from Python, as many small copies as a hold allows take milliseconds of host time and far
    less GPU time: a held window's [P0, T0] is the GPU's (the worker's GPU work is what it looks
    for), an unheld one stretches with the host."""
    from autograder import crosstime

    timer = crosstime.CrossTimer()
    launches = crosstime.HELD_LAUNCHES_MAX - 1
    _cross_window(timer, launches, held=False)
    unheld, _ = _cross_window(timer, launches, held=False)
    held, host_us = _cross_window(timer, launches, held=True)
    assert held.pre_us < 0.5 * unheld.pre_us, (held, unheld, host_us)
    assert held.pre_us < 0.5 * host_us, (held, host_us)


def test_read_only_and_write_only_streams_are_measured_beside_the_copy():
    """doctor's reading of why a kernel that mostly reads can pass 100% of copy: the same buffer read
    only and written only, each a rate of the same order as the copy's."""
    copy = ceilings.measure_copy_bandwidth()["bytes_per_s"]
    streams = ceilings.measure_streams()
    assert set(streams) == {"read", "write"}
    for rate in streams.values():
        assert 0.4 * copy < rate["bytes_per_s"] < 2.5 * copy, (streams, copy)


def test_a_windows_inputs_reach_the_shared_block_in_one_copy():
    """The judge stages each window's fresh inputs (every set, every tensor) in a block of its own and
    refills the shared block with one copy, whatever the number of tensors: here one decode layer's
    inputs for 32 calls, more tensors than a held stream takes launches."""
    import torch

    from autograder import shared

    problem = registry.get("act8.decode_layer")
    size = problem.bench_sizes[0]
    private = problem.make_inputs(size, 3, "cuda")
    sets, _, block = shared.shared_sets_of(private, 32, "cuda", arena=shared.Arena())
    stage, staged = block.staging()
    fresh = []
    for index in range(32):
        inputs = problem.make_inputs(size, 100 + index, "cuda")
        fresh.append(inputs)
        for name in sets[index]:
            staged[f"{index}/{name}"].copy_(inputs[name])
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        block.refill_from(stage)
    torch.cuda.synchronize()
    assert sum(len(tensors) for tensors in sets) > 256
    for index, tensors in enumerate(sets):
        for name, tensor in tensors.items():
            assert torch.equal(tensor, fresh[index][name]), (index, name)
