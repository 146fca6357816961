"""From the judge's facts to a verdict and points: the one place where grades are decided. It runs in
the judge process, never where the learner's code runs."""

from __future__ import annotations

import math

from . import problem as problem_mod
from . import registry


def _geomean(values: list[float]) -> float:
    if not values or any(v <= 0 or not math.isfinite(v) for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _annotate_speed(problem, result: dict) -> None:
    """Physical units and fractions of this GPU's ceilings for every benchmark row."""
    from . import timing

    entry = result.get("ceilings") or {}
    if not entry:
        return
    copy_bw = float(entry["copy"]["bytes_per_s"])
    matmul = entry.get("matmul", {})
    peak = _peak(matmul, problem.compute_dtype)
    for row in result["speed"]:
        seconds = row["candidate"]["median_ms"] * 1e-3
        intensity = row["flops"] / row["bytes_moved"] if row["bytes_moved"] else float("inf")
        # The roofline's time for this work is the slower of moving its bytes and doing its FLOPs;
        # written as times it also holds for work with no FLOPs (a transpose) or no bytes.
        roofline_s = max(row["bytes_moved"] / copy_bw, row["flops"] / peak)
        row["size_label"] = problem.size_label(_size_value(row["size"]))
        row["copy_fraction"] = row["bandwidth"] / copy_bw
        row["flop_per_s"] = row["flops"] / seconds
        row["library_flop_per_s"] = row["flops"] / (row["library"]["median_ms"] * 1e-3)
        row["intensity"] = intensity
        row["peak_flop_per_s"] = peak
        row["roofline_fraction"] = roofline_s / seconds
        row["below_floor"] = row["candidate"]["median_ms"] < timing.FLOOR_SLACK * row["floor_ms"]
        for extra in (row.get("extra_libraries") or {}).values():
            extra["ratio"] = extra["median_ms"] / row["candidate"]["median_ms"]
            extra["flop_per_s"] = row["flops"] / (extra["median_ms"] * 1e-3)


def _peak(matmul: dict, dtype: str) -> float:
    if not matmul:
        return float("inf")
    from . import ceilings

    return ceilings.compute_peak({"matmul": matmul}, dtype)


def _size_value(size):
    """Sizes come back from the child as JSON: tuples as their repr."""
    if isinstance(size, str):
        import ast

        try:
            return ast.literal_eval(size)
        except (ValueError, SyntaxError):
            return size
    return size


def score(problem, result: dict, device: str) -> dict:
    """Fill in the verdict and points. Correctness is all or nothing; speed points only follow a
    correct, honest kernel, from the geometric mean over the benchmark sizes."""
    result.setdefault("cases", [])
    result.setdefault("speed", [])
    result["title"] = problem.title
    result["max_points"] = problem.max_points
    result["max_points_here"] = problem.correctness_points + (problem.speed_points if device == "cuda" else 0.0)
    correct_points = speed_points = 0.0
    result["speed_note"] = ""
    if not problem_mod.has_speed_grade(problem):
        # A judge that timed the learner's wrapper itself (autograder.graphs) says what share of the speed points it earned.
        passed = result["status"] == "PASS"
        result["correctness_points"] = problem.correctness_points if passed else 0.0
        earned = result.get("speed_fraction") if passed and device == "cuda" else None
        result["speed_points"] = round(problem.speed_points * earned, 2) if earned is not None else 0.0
        result["speed_note"] = result.get("speed_note_text", "")
        result["points"] = round(result["correctness_points"] + result["speed_points"], 2)
        return result
    if result["status"] == "PASS":
        correct_points = problem.correctness_points
        cpu_honesty = result.get("honesty") if device != "cuda" else None
        if cpu_honesty and not cpu_honesty["ok"]:
            result["status"] = "REJECT"
            result["message"] = cpu_honesty["message"]
            correct_points = 0.0
        elif device != "cuda":
            result["speed_note"] = "needs a GPU: speed is graded only on a GPU"
        elif not result["speed"]:
            result["speed_note"] = "speed was not measured"
        else:
            _annotate_speed(problem, result)
            wrong = sum(r["wrong_timed_outputs"] for r in result["speed"])
            honesty = result.get("honesty") or {"ok": False, "message": "the kernels of the call were not checked"}
            if wrong:
                result["status"] = "FAIL"
                result["message"] = (
                    f"{wrong} timed calls returned a wrong answer: the output must be computed by each call, "
                    "from the inputs it is given (no caching, no skipped or deferred work)"
                )
                correct_points = 0.0
            elif not honesty["ok"]:
                result["status"] = "REJECT"
                result["message"] = honesty["message"]
                correct_points = 0.0
            elif any(r["below_floor"] for r in result["speed"]):
                result["status"] = "REJECT"
                result["message"] = (
                    "a time below the physical floor (bytes moved at this GPU's measured bandwidth, or FLOPs at its "
                    "measured matmul rate): the timing was fooled"
                )
                correct_points = 0.0
            elif not (result.get("baseline") or {}).get("graded", True):
                result["speed_note"] = result["baseline"].get("note") or "the library baseline that ran here is not the one the targets were set against"
            else:
                scale = problem.speed_scale
                metric = _geomean([scale.metric.of(r) for r in result["speed"]])
                result["speed_metric"] = {"name": scale.metric.name, "value": metric}
                speed_points = problem.speed_points * problem.speed_scale.fraction(metric)
    elif result["status"] == "NEEDS GPU":
        result["speed_note"] = "needs a GPU"
    result["correctness_points"] = correct_points
    result["speed_points"] = round(speed_points, 2)
    result["points"] = round(correct_points + speed_points, 2)
    return result


def needs_gpu_result(problem) -> dict:
    return {
        "problem": problem.name,
        "status": "NEEDS GPU",
        "message": f"{problem.title} {getattr(problem, 'needs_gpu_reason', 'runs CuPy kernels, which need an NVIDIA GPU')}; open this notebook in Colab with a GPU runtime",
        "cases": [],
        "speed": [],
    }


def finish(job: dict, result: dict) -> dict:
    """The judge's last step: what the learner's code printed (as text, never parsed) and the
    verdict and points."""
    import os

    from .session import read_log

    result["output"] = read_log(os.path.join(job["workdir"], "learner", "output.log"))
    return score(registry.get(job["problem"]), result, job["device"])
