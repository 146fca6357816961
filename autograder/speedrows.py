"""The speed part of a kernel grading: the learner's timed calls, then (with the learner's process
gone) the library's in the trusted helper, and the rows of the speed table from what the judge
charged each call."""

from __future__ import annotations

import secrets
import time

from . import crosstime, honesty, launch_count, timing
from .judging import summarise
from .result import BaselineRun, CaseResult, Honesty, SpeedRow
from .speedunits import SHORTEST_S

NULL_CALLS = 20
# Two calibrations of the switch between contexts (before the learner's code is loaded and after it
# is gone) that differ by more than this are reported: the GPU's scheduling changed meanwhile.
CALIBRATION_SPREAD = 0.25


def measure(grading, stages) -> None:
    g, p = grading, grading.problem
    g.learner.ask({"op": "flags", "handle": g.timer.handle}, timeout=g.remaining())
    learner_raws, learner_nulls, wrong, batches, launches, retimed = {}, {}, {}, {}, {}, []
    for size in p.bench_sizes:
        label = _label(size)
        measured, again = timed_for_verdict(g, stages, size, f"timed {label}")
        if again:
            retimed.append(label)
        case = CaseResult.from_dict(measured["case"])
        g.result.cases.append(case)
        if not case.passed:
            g.result.status, g.result.message = "FAIL", "some cases are wrong"
            return
        learner_raws[label], learner_nulls[label], wrong[label] = measured["raws"], measured["nulls"], measured["wrong"]
        batches[label] = measured["calls_per_window"]
        launches[label] = {"yours": measured["launch_us"]}
    g.stage("timed calls")
    # Nothing of the learner's may run while the library is timed: its worker and every process it
    # started are ended first.
    g.learner.end(spare=(g.helper.process.pid,))
    g._calibrate("after")
    baseline = p.baseline_for(g.device)
    g.result.baseline = BaselineRun(label=baseline.label, note=baseline.note, graded=baseline.speed_scale is not None)
    library_raws, library_nulls, extra_raws = {}, {}, {}
    for size in p.bench_sizes:
        label = _label(size)
        g.select(g.helper, "library_entry")
        measured = stages.timed(g.helper, size, secrets.randbits(62), check=False, phase=None)
        library_raws[label], library_nulls[label] = measured["raws"], measured["nulls"]
        launches.setdefault(label, {})["library"] = measured["launch_us"]
    missing = _time_extras(g, stages, baseline, extra_raws, library_nulls)
    if missing:
        g.result.baseline.note = " ".join(n for n in (g.result.baseline.note, missing) if n)
    g.stage("library")
    calibrations = [c["switch_us"] for c in (g.result.calibration or {}).values()]
    note = calibration_note(calibrations)
    if note:
        g.result.calibration_note = note
    charged, switches = {}, {}
    for size in p.bench_sizes:
        label = _label(size)
        library = library_raws[label]
        library_nulls_us = [r.window_us for r in library_nulls[label]]
        yours_us, library_us = switch_costs(calibrations, [r.window_us for r in learner_nulls[label]], library_nulls_us)
        switches[label] = {"yours": yours_us, "library": library_us}
        stalled_us = _median(library_nulls_us or [0.0])
        if stalled_us > library_us:
            stalled = f"the null calls between the library's windows at {label} took {stalled_us:.0f} us, more than the calibrations allow ({library_us:.0f} us subtracted)"
            g.result.calibration_note = "; ".join(n for n in (g.result.calibration_note, stalled) if n)
        pre_us, copy_us = _median([r.pre_us for r in library]), _median([r.copy_us for r in library])
        ref = crosstime.Reference(switch_us=yours_us, pre_us=pre_us, copy_us=copy_us)
        library_ref = crosstime.Reference(switch_us=library_us, pre_us=pre_us, copy_us=copy_us)
        # A window's charge is shared by its calls; each call counts for the honesty check.
        mine = [(c / r.calls, why, r.calls) for r, (c, why) in ((r, crosstime.charge(r, ref)) for r in learner_raws[label])]
        charged[f"timed {label}"] = [c for c, _, calls in mine for _ in range(calls)]
        row = {
            "size": size if isinstance(size, (int, float, str)) else repr(size),
            "calls_per_window": batches[label],
            "candidate": summarise([c for c, _, _ in mine]),
            "library": summarise(per_call(library, library_ref)),
            "bytes_moved": float(p.bytes_moved(size)),
            "flops": float(p.flops(size)),
            "floor_ms": timing.floor_ms(p, size, g.result.ceilings),
            "wrong_timed_outputs": wrong[label],
            "extra_libraries": {name: summarise(per_call(raws, library_ref)) for name, raws in extra_raws.get(label, {}).items()},
            "charged_more": _reasons([(c, why) for c, why, _ in mine]),
            "segments_us": {"yours": _segments(learner_raws[label]), "library": _segments(library)},
            # The library's calls per window (the learner's too: both are fitted to what the library
            # can queue ahead, before either is timed), and the windows that started before every
            # call was launched.
            "library_calls_per_window": min((r.calls for r in library), default=None),
            "unqueued_windows": {"yours": sum(not r.queued for r in learner_raws[label]), "library": sum(not r.queued for r in library)},
            # What each worker said launching a window took (its own clock): for diagnosis only.
            "reported_launch_us": {who: _median(values) for who, values in launches.get(label, {}).items() if values},
            # The helper's null calls between each side's windows before any cap, and whether the
            # learner's calls at this size were timed a second time: for diagnosis only.
            "null_us": {"yours": _median([r.window_us for r in learner_nulls[label]] or [0.0]), "library": _median([r.window_us for r in library_nulls[label]] or [0.0])},
            "retimed": label in retimed,
        }
        # A call charged nothing (its window no longer than the switch) is below any physical floor,
        # which the verdict says; its rates are huge but finite.
        seconds = max(row["candidate"]["median_ms"] * 1e-3, SHORTEST_S)
        library_seconds = max(row["library"]["median_ms"] * 1e-3, SHORTEST_S)
        row.update(bandwidth=row["bytes_moved"] / seconds, library_bandwidth=row["bytes_moved"] / library_seconds, ratio=library_seconds / seconds)
        g.result.speed.append(SpeedRow.from_dict(row))
    g.result.honesty = Honesty.from_dict(honesty.judge_gpu(g.phases, g.own_kernels, p.allowed_library_kernels, charged))
    if g.result.honesty.ok:
        counted = launch_count.judge_gpu(g.phases, g.own_kernels, charged, p.max_launches)
        if counted:
            g.result.honesty = Honesty.from_dict(counted)
    g.result.switch_us = switches


def timed_for_verdict(g, stages, size, phase: str) -> tuple[dict, bool]:
    """The learner's timed windows at one size, and whether they were timed twice: a size whose
    windows the learner's kernels fall short of is timed once more, and the second timing is the one
    judged. Windows stretched by a host that was busy elsewhere (other gradings compiling beside this
    one) read as work the profiler missed; work hidden from the profiler is hidden again. Windows
    that stopped early for a slow call are judged as they are: a busy host stretches a window by
    milliseconds, not by the half of seconds-long windows that the accounting asks of the kernels,
    and timing such a call again would spend the grading's limit on a call far from any points."""
    measured = stages.timed(g.learner, size, secrets.randbits(62), check=True, phase=phase)
    if measured["case"] and measured["case"]["passed"] and not measured["slow"] and _unaccounted(g, measured, phase):
        return stages.timed(g.learner, size, secrets.randbits(62), check=True, phase=phase), True
    return measured, False


def _unaccounted(g, measured: dict, phase: str) -> bool:
    """The honesty check's accounting on one size's windows as they stand, with the switch measured
    before the learner's code was loaded: whether the learner's kernels fall short of the calls'
    charge."""
    switch_us = min(c["switch_us"] for c in (g.result.calibration or {}).values()) if g.result.calibration else 0.0
    charges = [max(r.window_us - switch_us, 0.0) / r.calls for r in measured["raws"] for _ in range(r.calls)]
    return honesty.unaccounted(g.phases.get(phase, {}), g.own_kernels, charges) is not None


# The baselines shown beside the library may compile first (torch.compile): at most this long.
EXTRAS_BUDGET_S = 120.0


def _time_extras(g, stages, baseline, extra_raws: dict, library_nulls: dict) -> str | None:
    """The baselines timed beside the library, once the library's own times are in: one that cannot
    run here (a compiler that fails, a call past the budget) is left out of the table with a note and
    never touches the learner's verdict. Returns the note, if any."""
    deadline = g.deadline
    g.deadline = min(deadline, time.monotonic() + EXTRAS_BUDGET_S)
    try:
        for index, (name, _) in enumerate(baseline.extra_libraries):
            for size in g.problem.bench_sizes:
                label = _label(size)
                g.select(g.helper, f"extra_{index}")
                extra = stages.timed(g.helper, size, secrets.randbits(62), check=False, phase=None, adapt=True)
                extra_raws.setdefault(label, {})[name] = extra["raws"]
                # The helper's nulls between any library's calls measure the same trusted switch.
                library_nulls[label] += extra["nulls"]
    except Exception as failed:  # noqa: BLE001 -- a baseline shown for comparison, never the learner's fault
        reason = str(failed).replace("your function", "it")[:240]
        for timed in extra_raws.values():
            timed.pop(name, None)
        return f"{name} could not be timed here ({type(failed).__name__}: {reason}); it is left out."
    finally:
        g.deadline = deadline
    return None


def switch_costs(calibrations: list[float], yours_nulls_us: list[float], library_nulls_us: list[float]) -> tuple[float, float]:
    """What to subtract from the learner's windows and from the library's: the median of the
    helper's null calls made between their timed calls, so the switch between processes is
    measured while the GPU is in the state the calls ran in (its cost drifts by tens of
    microseconds within a grading, as much as a memory-bound kernel's margin). The learner's
    process is alive during its nulls and could load the GPU to inflate them, so the learner's
    value is capped by the nearest measurement made without its code: the nulls between the
    library's calls at the same size (or, without them, the lower calibration)."""
    library = _median(library_nulls_us) if library_nulls_us else min(calibrations)
    # The library's nulls are capped in turn by the calibrations: a host that stalls the helper
    # between windows stretches its null calls and not the windows queued ahead, and a switch
    # read ten times too long charged an honest kernel nothing (an H100 with other gradings beside
    # it: nulls of 3.3 ms against calibrations near 350 us).
    library = min(library, switch_ceiling(calibrations))
    yours = _median(yours_nulls_us) if yours_nulls_us else library
    return min(yours, library), library


def switch_ceiling(calibrations: list[float]) -> float:
    """The most a switch may cost at any size: the higher calibration and the spread they may drift."""
    return (1 + CALIBRATION_SPREAD) * max(calibrations)


def calibration_note(calibrations: list[float]) -> str | None:
    low, high = min(calibrations), max(calibrations)
    if high > (1 + CALIBRATION_SPREAD) * low:
        return f"the cost of switching between processes on this GPU changed during the grading ({low:.0f} us and {high:.0f} us)"
    return None


def per_call(raws: list, ref) -> list[float]:
    """Each window's charge shared by its own calls (a library whose calls could not all be queued
    ahead of their window runs fewer a window than the learner's function)."""
    return [crosstime.charge(r, ref)[0] / r.calls for r in raws]


def _segments(raws: list) -> dict:
    """Median of each segment of the judge's timeline of a call, for the report and for diagnosis."""
    return {name: _median([getattr(r, name) for r in raws]) for name in ("pre_us", "window_us", "copy_gap_us", "copy_us")}


def _reasons(charges: list[tuple[float, list[str]]]) -> dict:
    counted: dict[str, int] = {}
    for _, why in charges:
        for reason in why:
            counted[reason] = counted.get(reason, 0) + 1
    return counted


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def _label(size) -> str:
    return repr(size)
