"""The arithmetic of the cross-process timing protocol, without a GPU: what a call is charged from the
judge's own event times, which switch cost is subtracted, and which inputs a timed call is refilled with."""

import pytest
import torch

from autograder import crosstime, speedrows
from autograder.windows import _same_kind

REF = crosstime.Reference(switch_us=300.0, pre_us=400.0, copy_us=90.0)


def test_an_undisturbed_call_is_charged_its_window_less_the_switch():
    charged, why = crosstime.charge(crosstime.Raw(pre_us=400.0, window_us=440.0, copy_gap_us=1.0, copy_us=90.0), REF)
    assert charged == pytest.approx(140.0)
    assert why == []


def test_work_while_the_judge_prepared_the_call_is_charged():
    charged, why = crosstime.charge(crosstime.Raw(pre_us=900.0, window_us=440.0, copy_gap_us=1.0, copy_us=90.0), REF)
    assert charged == pytest.approx(900.0 + 440.0 - 400.0 - 300.0)
    assert why == ["GPU work of the worker ran while the judge prepared the call"]


def test_an_answer_after_the_work_and_work_during_the_read_are_charged():
    charged, why = crosstime.charge(crosstime.Raw(pre_us=400.0, window_us=440.0, copy_gap_us=50.0, copy_us=500.0), REF)
    assert charged == pytest.approx(440.0 + 50.0 + 500.0 - 90.0 - 300.0)
    assert len(why) == 2


def test_the_switch_is_measured_between_the_calls_it_is_subtracted_from():
    # The cost drifted up during the grading (both timed loops saw about 345 us, the calibrations
    # 310 and 354): each loop's own null calls are subtracted, not a calibration.
    yours, library = speedrows.switch_costs([310.0, 354.0], [344.0, 346.0, 345.0], [348.0, 347.0, 349.0])
    assert yours == pytest.approx(345.0)
    assert library == pytest.approx(348.0)


def test_null_calls_inflated_while_the_learner_ran_are_capped():
    # Nulls made while the learner's process was alive cannot exceed the library loop's nulls,
    # measured with none of its code running: inflating them lowers no charge.
    yours, library = speedrows.switch_costs([310.0, 320.0], [900.0, 950.0, 1000.0], [318.0, 319.0, 321.0])
    assert yours == pytest.approx(319.0)
    assert library == pytest.approx(319.0)


def test_library_nulls_stretched_past_the_calibrations_are_capped():
    # A stalled host stretched the helper's null calls between the library's windows tenfold (an
    # H100 beside other gradings): subtracting them charged an honest kernel nothing.
    yours, library = speedrows.switch_costs([340.0, 352.0], [3300.0, 3400.0, 3350.0], [3340.0, 3360.0, 3350.0])
    assert library == pytest.approx(1.25 * 352.0)
    assert yours == pytest.approx(library)


def test_cheaper_nulls_are_used_as_they_are():
    yours, _ = speedrows.switch_costs([310.0, 320.0], [250.0, 251.0, 252.0], [300.0])
    assert yours == pytest.approx(251.0)


def test_without_nulls_the_lower_calibration_is_used():
    assert speedrows.switch_costs([310.0, 320.0], [], []) == (310.0, 310.0)


def test_a_large_spread_of_calibrations_is_reported():
    assert speedrows.calibration_note([300.0, 310.0]) is None
    assert "changed during the grading" in speedrows.calibration_note([300.0, 400.0])


def test_refilled_inputs_keep_the_first_draws_scalars_and_shapes():
    first = torch.zeros(4)
    fresh = torch.ones(4)
    assert _same_kind(fresh, first) is fresh
    assert _same_kind(torch.ones(5), first) is first
    assert _same_kind(torch.ones(4, dtype=torch.float64), first) is first
    assert _same_kind(2.5, 1.5) == 1.5


def test_only_the_library_helper_calls_another_entry_by_name():
    from autograder._worker import Worker

    def loaded():
        return "loaded"

    def null_entry():
        return "null"

    for role, expected in (("library", null_entry), ("learner", loaded)):
        worker = Worker({"role": role, "device": "cpu"})
        worker.fn, worker.module = loaded, type("Module", (), {"null_entry": staticmethod(null_entry)})
        assert worker._entry({"entry": "null_entry"}) is expected
        assert worker._entry({}) is loaded


def test_short_calls_share_a_window_within_the_memory_share():
    from autograder import windows

    gib = 1 << 30
    assert windows.batch_size(floor_us=135.0, call_bytes=768 << 20, memory_bytes=16 * gib) == 21
    assert windows.batch_size(floor_us=200.0, call_bytes=768 << 20, memory_bytes=16 * gib) == 20
    assert windows.batch_size(floor_us=10.0, call_bytes=1 << 20, memory_bytes=16 * gib) == windows.MAX_BATCH
    assert windows.batch_size(floor_us=5000.0, call_bytes=1 << 20, memory_bytes=16 * gib) == 1
    assert windows.batch_size(floor_us=135.0, call_bytes=768 << 20, memory_bytes=3 * gib) == 4
    assert windows.batch_size(floor_us=1.0, call_bytes=64 * gib, memory_bytes=16 * gib) == 1
    assert windows.batch_size(floor_us=0.0, call_bytes=1 << 20, memory_bytes=16 * gib) == windows.MAX_BATCH


def test_each_call_of_a_window_gets_inputs_of_its_own(tmp_path):
    from autograder import shared, windows

    private = {"x": torch.randn(5), "y": torch.randn(2, 3), "n": 5}
    tensors, descriptors, _ = windows.shared_sets_of(private, 3, "cpu", str(tmp_path))
    assert [[d["name"] for d in described] for described in descriptors] == [["x", "y", "n"]] * 3
    opened = [shared.open_inputs(described, "cpu") for described in descriptors]
    for index, (mine, theirs) in enumerate(zip(tensors, opened, strict=True)):
        mine["x"].fill_(float(index))
        assert theirs["n"] == 5 and theirs["y"].shape == (2, 3)
    assert [float(o["x"][0]) for o in opened] == [0.0, 1.0, 2.0]


def test_the_judges_shared_blocks_are_whole_2_mib_pages():
    """A block shared through IPC in any other size was read 1.66x slower by the worker (H100:
    results/runs/2026-11-25-2xh100-test-gpu/README.md)."""
    from autograder.cuda_driver import whole_pages

    mib = 1 << 20
    assert [whole_pages(n) for n in (0, 1, 2 * mib, 2 * mib + 1, 7 * 1000**3)] == [2 * mib, 2 * mib, 2 * mib, 4 * mib, 3338 * 2 * mib]


class _Worker:
    """A worker whose answer arrives after ``answer_s`` seconds, using ``busy`` CPU seconds per second
    until then; ``ready`` advances a fake clock instead of sleeping."""

    def __init__(self, answer_s: float, busy: float) -> None:
        self.now, self.answer_s, self.busy = 0.0, answer_s, busy

    def ready(self, timeout: float) -> bool:
        if self.now + timeout >= self.answer_s:
            self.now = self.answer_s
            return True
        self.now += timeout
        return False

    def cpu_s(self) -> float:
        return self.busy * min(self.now, self.answer_s)


def test_the_window_waits_for_a_worker_that_is_still_launching():
    worker = _Worker(answer_s=1.2, busy=0.9)
    assert crosstime.answered(worker.ready, worker.cpu_s)
    assert worker.now == 1.2


def test_a_worker_that_waits_without_working_gets_the_first_wait_only():
    worker = _Worker(answer_s=1.2, busy=0.01)
    assert not crosstime.answered(worker.ready, worker.cpu_s)
    assert worker.now <= crosstime.LAUNCH_WAIT_S + crosstime.LAUNCH_STEP_S + 1e-9


def test_a_busy_worker_is_waited_for_no_longer_than_the_cap():
    worker = _Worker(answer_s=60.0, busy=1.0)
    assert not crosstime.answered(worker.ready, worker.cpu_s)
    assert worker.now <= crosstime.LAUNCH_WAIT_MAX_S + 1e-9


def test_without_the_workers_cpu_time_the_first_wait_decides():
    worker = _Worker(answer_s=0.5, busy=1.0)
    assert not crosstime.answered(worker.ready, None)
    assert crosstime.answered(_Worker(answer_s=0.1, busy=0.0).ready, None)


def test_each_window_is_shared_by_its_own_calls():
    raws = [crosstime.Raw(pre_us=400.0, window_us=1300.0, copy_gap_us=1.0, copy_us=90.0, calls=4), crosstime.Raw(pre_us=400.0, window_us=700.0, copy_gap_us=1.0, copy_us=90.0, calls=2)]
    assert speedrows.per_call(raws, REF) == [250.0, 200.0]


def test_a_window_counts_one_queued_call_unless_told():
    raw = crosstime.Raw(pre_us=400.0, window_us=1000.0, copy_gap_us=1.0, copy_us=90.0)
    assert (raw.calls, raw.queued) == (1, True)


def test_the_read_after_a_window_of_fewer_calls_copies_as_many_outputs_as_a_full_one():
    outputs = [torch.arange(4.0) + index for index in range(3)]
    copies, made = crosstime.copy_outputs(outputs, reads=8)
    assert made == 8
    assert len(copies) == 3 and all(torch.equal(copy, output) for copy, output in zip(copies, outputs, strict=True))
    assert all(copy.data_ptr() != output.data_ptr() for copy, output in zip(copies, outputs, strict=True))
    assert crosstime.copy_outputs(outputs)[1] == 3
    assert crosstime.copy_outputs([], reads=8) == ([], 0)


def test_inputs_staged_in_a_block_of_their_own_reach_the_shared_block_in_one_copy(tmp_path, monkeypatch):
    from autograder import shared

    values = {"0/a": torch.randn(3, 5).t(), "0/b": torch.arange(7, dtype=torch.int32), "1/a": torch.randn(3, 5).t(), "1/s": torch.tensor(2.5), "1/n": 4}
    inputs = shared.Inputs(values, "cpu", str(tmp_path))
    block = torch.zeros(inputs._total, dtype=torch.uint8)
    monkeypatch.setattr(shared.Inputs, "_whole", lambda self: block)
    stage, staged = inputs.staging()
    assert set(staged) == {"0/a", "0/b", "1/a", "1/s"}
    assert all(view.shape == values[name].shape and view.stride() == values[name].stride() for name, view in staged.items())
    for name, view in staged.items():
        view.copy_(values[name])
    assert not block.any()
    inputs.refill_from(stage)
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(shared.place(block, inputs._offsets[name], value), value)


def test_windows_are_fitted_to_the_library_before_either_side_is_timed():
    from types import SimpleNamespace

    from autograder import windows

    selected, asked = [], []

    class Stages(windows.TimedWindows):
        def __init__(self, fails: bool = False) -> None:
            self.problem = SimpleNamespace(bench_sizes=[1 << 20, (4, 8)])
            self.g = SimpleNamespace(helper="helper", select=lambda session, entry: selected.append((session, entry)), windows={})
            self.fails = fails

        def timed(self, session, size, seed, check, phase, adapt=False, fit_only=False):
            asked.append((session, size, check, adapt, fit_only, dict(self.g.windows)))
            if self.fails:
                raise RuntimeError("the library could not load")
            return {"calls_per_window": 4}

    planned = {1 << 20: 32, "(4, 8)": 1}
    assert Stages().fit_windows(planned) == {1 << 20: 4, "(4, 8)": 1}
    assert selected == [("helper", "library_entry")]
    # Only a size of several calls is tried, in the library helper, warm-up only, from the plan.
    assert asked == [("helper", 1 << 20, False, True, True, planned)]
    assert Stages(fails=True).fit_windows(planned) == planned


class _Grading:
    """What speedrows reads of a grading to account for one size's windows."""

    def __init__(self, own_us_total: float) -> None:
        self.result = type("Result", (), {"calibration": {"before": {"switch_us": 300.0}, "after": {"switch_us": 340.0}}})()
        self.phases = {"timed 134217728": {"kernels": [{"name": "add_kernel", "total_us": own_us_total}, {"name": "void at::native::fill<int>()", "total_us": 5000.0}]}}
        self.own_kernels = {"add_kernel"}
        self.learner = "the learner's worker"


def _windows(*window_us: float, calls: int = 5) -> dict:
    return {"raws": [crosstime.Raw(pre_us=400.0, window_us=w, copy_gap_us=3.0, copy_us=90.0, calls=calls) for w in window_us]}


def test_windows_the_learners_kernels_account_for_are_judged_as_timed():
    # Ten windows of five calls of a 528 us kernel: 2,640 us of work and the 300 us switch.
    g = _Grading(own_us_total=50 * 528.0)
    assert not speedrows._unaccounted(g, _windows(*[2950.0] * 10), "timed 134217728")


def test_windows_stretched_past_twice_the_learners_kernels_are_timed_again():
    # The same kernels in windows that took 5,850 us (a host busy elsewhere, or work the profiler
    # missed): the kernels account for less than half of each call's charge.
    g = _Grading(own_us_total=50 * 528.0)
    assert speedrows._unaccounted(g, _windows(*[5850.0] * 6, *[2950.0] * 4), "timed 134217728")
    # Library kernels never count as the learner's, however long they ran.
    g.own_kernels = set()
    assert speedrows._unaccounted(g, _windows(*[2950.0] * 10), "timed 134217728")


def test_calls_too_short_to_account_for_are_not_timed_again():
    g = _Grading(own_us_total=0.0)
    assert not speedrows._unaccounted(g, _windows(*[350.0] * 10), "timed 134217728")


class _Stages:
    """Timed windows handed out in order; each timing replaces its phase's profile, as the worker's
    watch does."""

    def __init__(self, grading: _Grading, timings: list[tuple[float, list[float]]], slow: bool = False) -> None:
        self.grading, self.timings, self.calls, self.slow = grading, list(timings), 0, slow

    def timed(self, session, size, seed, check, phase):
        own_us_total, window_us = self.timings[self.calls]
        self.calls += 1
        self.grading.phases[phase] = {"kernels": [{"name": "add_kernel", "total_us": own_us_total}]}
        return {**_windows(*window_us), "case": {"passed": True}, "timing": self.calls, "slow": self.slow}


def test_a_size_the_kernels_fall_short_of_is_timed_once_more_and_the_second_timing_judged():
    g = _Grading(own_us_total=0.0)
    stages = _Stages(g, [(50 * 528.0, [5850.0] * 10), (50 * 528.0, [2950.0] * 10), (50 * 528.0, [2950.0] * 10)])
    measured, again = speedrows.timed_for_verdict(g, stages, 1 << 27, "timed 134217728")
    assert again and measured["timing"] == 2 and stages.calls == 2
    assert not speedrows._unaccounted(g, measured, "timed 134217728")


def test_work_hidden_from_the_profiler_is_timed_twice_and_still_falls_short():
    g = _Grading(own_us_total=0.0)
    stages = _Stages(g, [(10 * 528.0, [2950.0] * 10)] * 3)
    measured, again = speedrows.timed_for_verdict(g, stages, 1 << 27, "timed 134217728")
    assert again and stages.calls == 2
    assert speedrows._unaccounted(g, measured, "timed 134217728")


def test_accounted_windows_are_timed_once():
    g = _Grading(own_us_total=0.0)
    stages = _Stages(g, [(50 * 528.0, [2950.0] * 10)] * 2)
    measured, again = speedrows.timed_for_verdict(g, stages, 1 << 27, "timed 134217728")
    assert not again and stages.calls == 1 and measured["timing"] == 1


def test_windows_that_stopped_early_for_a_slow_call_are_judged_as_timed():
    # NumPy on the host: two windows of five calls of 274 ms, the kernels 64 us a call. A busy host
    # cannot explain seconds of a window, so the windows are judged once, and they fall short.
    g = _Grading(own_us_total=0.0)
    stages = _Stages(g, [(10 * 64.0, [5 * 274_000.0] * 2)] * 2, slow=True)
    measured, again = speedrows.timed_for_verdict(g, stages, 1 << 27, "timed 134217728")
    assert not again and stages.calls == 1
    assert speedrows._unaccounted(g, measured, "timed 134217728")
