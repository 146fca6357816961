"""The speed part of a kernel grading: the learner's timed calls, then (with the learner's process
gone) the library's in the trusted helper, and the rows of the speed table from what the judge
charged each call."""

from __future__ import annotations

import secrets

from . import crosstime, honesty, timing
from .judging import summarise

NULL_CALLS = 20
# Two calibrations of the switch between contexts (before the learner's code is loaded and after it
# is gone) that differ by more than this are reported: the GPU's scheduling changed meanwhile.
CALIBRATION_SPREAD = 0.25


def measure(grading, stages) -> None:
    g, p = grading, grading.problem
    g.learner.ask({"op": "flags", "handle": g.timer.handle}, timeout=g.remaining())
    learner_raws, wrong = {}, {}
    for size in p.bench_sizes:
        label = _label(size)
        measured = stages.timed(g.learner, size, secrets.randbits(62), check=True, phase=f"timed {label}")
        g.result["cases"].append(measured["case"])
        if not measured["case"]["passed"]:
            g.result.update(status="FAIL", message="some cases are wrong")
            return
        learner_raws[label], wrong[label] = measured["raws"], measured["wrong"]
    g.stage("timed calls")
    # Nothing of the learner's may run while the library is timed: its worker and every process it
    # started are ended first.
    g.learner.end(spare=(g.helper.process.pid,))
    g._calibrate("after")
    baseline = p.baseline_for(g.device)
    g.result["baseline"] = {"label": baseline.label, "note": baseline.note, "graded": baseline.speed_scale is not None}
    library_raws, extra_raws = {}, {}
    for size in p.bench_sizes:
        label = _label(size)
        g.select(g.helper, "library_entry")
        library_raws[label] = stages.timed(g.helper, size, secrets.randbits(62), check=False, phase=None)["raws"]
        for index, (name, _) in enumerate(baseline.extra_libraries):
            g.select(g.helper, f"extra_{index}")
            extra_raws.setdefault(label, {})[name] = stages.timed(g.helper, size, secrets.randbits(62), check=False, phase=None)["raws"]
    g.stage("library")
    switch = _switch_cost(g)
    charged = {}
    for size in p.bench_sizes:
        label = _label(size)
        library = library_raws[label]
        ref = crosstime.Reference(switch_us=switch, pre_us=_median([r.pre_us for r in library]), copy_us=_median([r.copy_us for r in library]))
        mine = [crosstime.charge(r, ref) for r in learner_raws[label]]
        charged[f"timed {label}"] = [c for c, _ in mine]
        row = {
            "size": size if isinstance(size, (int, float, str)) else repr(size),
            "candidate": summarise([c for c, _ in mine]),
            "library": summarise([crosstime.charge(r, ref)[0] for r in library]),
            "bytes_moved": float(p.bytes_moved(size)),
            "flops": float(p.flops(size)),
            "floor_ms": timing.floor_ms(p, size, g.result["ceilings"]),
            "wrong_timed_outputs": wrong[label],
            "extra_libraries": {name: summarise([crosstime.charge(r, ref)[0] for r in raws]) for name, raws in extra_raws.get(label, {}).items()},
            "charged_more": _reasons(mine),
            "segments_us": {"yours": _segments(learner_raws[label]), "library": _segments(library)},
        }
        seconds = row["candidate"]["median_ms"] * 1e-3
        library_seconds = row["library"]["median_ms"] * 1e-3
        row.update(bandwidth=row["bytes_moved"] / seconds, library_bandwidth=row["bytes_moved"] / library_seconds, ratio=library_seconds / seconds)
        g.result["speed"].append(row)
    g.result["honesty"] = honesty.judge_gpu(g.phases, g.own_kernels, p.allowed_library_kernels, charged)
    g.result["switch_us"] = switch


def _switch_cost(g) -> float:
    """The smaller calibration: a switch that got cheaper while the learner ran cannot lower a charge."""
    values = [c["switch_us"] for c in g.result.get("calibration", {}).values()]
    low, high = min(values), max(values)
    if high > (1 + CALIBRATION_SPREAD) * low:
        g.result["calibration_note"] = f"the cost of switching between processes on this GPU changed during the grading ({low:.0f} us and {high:.0f} us)"
    return low


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
