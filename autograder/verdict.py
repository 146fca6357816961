"""From the judge's facts to a verdict and points: the one place where grades are decided. It runs in
the judge process, never where the learner's code runs.

The judge's stages (autograder._judge: screen and tamper checks on every output, the correctness
cases, the timed outputs, honesty) write what they found into a ProblemResult; ``facts_of`` reads
that and this GPU's floor into Facts, and ``decide`` walks CHECKS in order: the first check that
has something to say sets the verdict and points, and a result every check lets through earns its
speed points.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from . import problem as problem_mod
from . import registry
from .result import Exercise, Honesty, MetricValue, ProblemResult

UNCHECKED = Honesty(ok=False, message="the kernels of the call were not checked")
WRONG_TIMED = (
    "{wrong} timed calls returned a wrong answer: the output must be computed by each call, "
    "from the inputs it is given (no caching, no skipped or deferred work)"
)
BELOW_FLOOR = (
    "a time below the physical floor (bytes moved at this GPU's measured bandwidth, or FLOPs at its "
    "measured matmul rate): the timing was fooled"
)


@dataclass(frozen=True)
class Facts:
    """What the stages established, all a verdict is decided from.

    ``status``/``message``: where the judge's stages ended (PASS when every correctness case was
    right). ``cpu_honesty``: the Triton interpreter's check of the learner's kernels (CPU only).
    ``timed``: benchmark rows exist. ``wrong_timed_outputs``: timed calls whose output was wrong.
    ``honesty``: the profiler's check of the timed calls (GPU). ``below_floor``: a benchmark size
    was timed under the physical floor. ``baseline_graded``: the library that ran is the one the
    targets were set against. ``metric``: the speed metric's geometric mean over the sizes.
    """

    status: str
    message: str
    device: str
    speed_graded: bool
    cpu_honesty: Honesty | None = None
    timed: bool = False
    wrong_timed_outputs: int = 0
    honesty: Honesty | None = None
    below_floor: bool = False
    baseline_graded: bool = True
    baseline_note: str = ""
    metric: MetricValue | None = None


@dataclass(frozen=True)
class Verdict:
    """The status and message (None: the stages' own), the points earned, and what the report says
    about speed."""

    status: str | None = None
    message: str | None = None
    correct: bool = False
    speed_note: str = ""
    metric: MetricValue | None = None


# -- the checks, in the order they are applied ------------------------------------------------------
def _no_speed_grade(f: Facts) -> Verdict | None:
    if not f.speed_graded:
        return Verdict(correct=f.status == "PASS")
    return None


def _correctness(f: Facts) -> Verdict | None:
    if f.status == "PASS":
        return None
    return Verdict(speed_note="needs a GPU" if f.status == "NEEDS GPU" else "")


def _cpu_honesty(f: Facts) -> Verdict | None:
    if f.device != "cuda" and f.cpu_honesty and not f.cpu_honesty.ok:
        return Verdict(status="REJECT", message=f.cpu_honesty.message)
    return None


def _needs_gpu(f: Facts) -> Verdict | None:
    if f.device != "cuda":
        return Verdict(correct=True, speed_note="needs a GPU: speed is graded only on a GPU")
    return None


def _measured(f: Facts) -> Verdict | None:
    return None if f.timed else Verdict(correct=True, speed_note="speed was not measured")


def _timed_outputs(f: Facts) -> Verdict | None:
    if f.wrong_timed_outputs:
        return Verdict(status="FAIL", message=WRONG_TIMED.format(wrong=f.wrong_timed_outputs))
    return None


def _honesty(f: Facts) -> Verdict | None:
    honesty = f.honesty or UNCHECKED
    return None if honesty.ok else Verdict(status="REJECT", message=honesty.message)


def _floor(f: Facts) -> Verdict | None:
    return Verdict(status="REJECT", message=BELOW_FLOOR) if f.below_floor else None


def _baseline(f: Facts) -> Verdict | None:
    if f.baseline_graded:
        return None
    return Verdict(correct=True, speed_note=f.baseline_note or "the library baseline that ran here is not the one the targets were set against")


CHECKS: tuple[tuple[str, Callable[[Facts], Verdict | None]], ...] = (
    ("speed grade", _no_speed_grade),
    ("correctness", _correctness),
    ("honesty on the CPU", _cpu_honesty),
    ("a GPU", _needs_gpu),
    ("speed measured", _measured),
    ("timed outputs", _timed_outputs),
    ("honesty", _honesty),
    ("floor", _floor),
    ("baseline", _baseline),
)


def decide(facts: Facts) -> Verdict:
    """The verdict: the first check with something to say, else a correct, honest, measured kernel
    whose speed earns points."""
    for _, check in CHECKS:
        found = check(facts)
        if found is not None:
            return found
    return Verdict(correct=True, metric=facts.metric)


def points(exercise: Exercise, verdict: Verdict, scale=None) -> tuple[float, float]:
    """(correctness points, speed points) for a verdict: correctness is all or nothing; speed points
    follow only a verdict that carries the speed metric, through the exercise's scale."""
    correct = exercise.correctness_points if verdict.correct else 0.0
    speed = 0.0
    if verdict.metric is not None and scale is not None:
        speed = exercise.speed_points * scale.fraction(verdict.metric.value)
    return correct, speed


# -- facts from a result --------------------------------------------------------------------------
def _geomean(values: list[float]) -> float:
    if not values or any(v <= 0 or not math.isfinite(v) for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def facts_of(problem, result: ProblemResult, device: str) -> Facts:
    """The facts of a result whose speed rows (if any) are annotated."""
    speed_graded = problem_mod.has_speed_grade(problem)
    if not speed_graded or result.status != "PASS" or device != "cuda" or not result.speed:
        return Facts(result.status, result.message, device, speed_graded, cpu_honesty=result.honesty if device != "cuda" else None, timed=bool(result.speed))
    baseline = result.baseline
    scale = problem.speed_scale
    metric = MetricValue(scale.metric.name, _geomean([scale.metric.of(r.to_dict()) for r in result.speed]))
    return Facts(
        result.status,
        result.message,
        device,
        speed_graded,
        timed=True,
        wrong_timed_outputs=sum(r.wrong_timed_outputs for r in result.speed),
        honesty=result.honesty,
        below_floor=any(r.below_floor for r in result.speed),
        baseline_graded=baseline.graded if baseline is not None else True,
        baseline_note=(baseline.note if baseline is not None else "") or "",
        metric=metric,
    )


def score_result(problem, result: ProblemResult, device: str) -> ProblemResult:
    """Annotate the speed rows, decide the verdict and fill in the points (in place)."""
    from . import speedunits

    exercise = Exercise.of(problem)
    result.exercise = exercise
    if result.device is None:
        result.device = device
    result.title = problem.title
    result.max_points = problem.max_points
    result.max_points_here = max_points_on(problem, device)
    if problem.kind in ("interactive", "graphed"):
        return _score_judged_speed(problem, result, device)
    if exercise.speed_graded and result.status == "PASS" and device == "cuda" and result.speed:
        speedunits.annotate(problem, result)
    verdict = decide(facts_of(problem, result, device))
    if verdict.status is not None:
        result.status, result.message = verdict.status, verdict.message
    result.speed_note = verdict.speed_note
    if verdict.metric is not None:
        result.speed_metric = verdict.metric
    correct, speed = points(exercise, verdict, getattr(problem, "speed_scale", None))
    result.correctness_points = correct
    result.speed_points = round(speed, 2) if exercise.speed_graded else 0.0
    result.points = round(correct + speed, 2) if exercise.speed_graded else correct
    return result


def score(problem, result: dict | ProblemResult, device: str) -> dict:
    """Fill in the verdict and points of a result (as the judge sends it) and return it as a dict.
    Correctness is all or nothing; speed points only follow a correct, honest kernel, from the
    geometric mean over the benchmark sizes."""
    if problem.kind == "distributed":
        from . import distributed

        return distributed.score(problem, result if isinstance(result, dict) else result.to_dict(), device)
    typed = ProblemResult.from_dict(result) if isinstance(result, dict) else result
    return score_result(problem, typed, device).to_dict()


def max_points_on(problem, device: str) -> float:
    """The points a grading on ``device`` can award: all of them on a GPU; on a CPU the correctness
    points of a Triton or Python exercise and none of an exercise that needs a GPU (CuPy, measured)."""
    if device == "cuda" or problem.kind == "interactive":
        return problem.max_points
    if problem.needs_gpu:
        return 0.0
    return problem.correctness_points


NEEDS_GPU = "NEEDS GPU"


def part_status(result: dict, part: str = "all") -> str:
    """The status of one graded cell (``part``: "correctness", "speed" or "all") of a grading:
    NEEDS GPU where points of that cell could not be graded on this machine (a CuPy exercise on a CPU,
    a correct kernel whose speed was not timed), otherwise the grading's own status. A zero that
    means "needs a GPU" is never shown as a wrong answer."""
    status = result["status"]
    if status != "PASS" or result.get("device") == "cuda":
        return status
    problem = registry.get(result["problem"])
    if part != "correctness" and problem_mod.has_speed_grade(problem) and problem.speed_points:
        return NEEDS_GPU
    return status


def needs_gpu_result(problem) -> dict:
    return {
        "problem": problem.name,
        "status": "NEEDS GPU",
        "message": f"{problem.title} {getattr(problem, 'needs_gpu_reason', 'runs CuPy kernels, which need an NVIDIA GPU')}; open this notebook in Colab with a GPU runtime",
        "cases": [],
        "speed": [],
    }


def finish(job: dict, result: ProblemResult) -> dict:
    """The judge's last step: what the learner's code printed (as text, never parsed) and the
    verdict and points."""
    import os

    from .worker_log import read_log

    result.output = read_log(os.path.join(job["workdir"], "learner", "output.log"))
    return score(registry.get(job["problem"]), result, job["device"])


def _score_judged_speed(problem, result: ProblemResult, device: str) -> ProblemResult:
    """An exercise whose speed the judge measured itself: an object whose decisions the grader acted on
    ("interactive": model steps on a CPU, its own timed replay on a GPU, so on any machine) or a wrapper
    the judge timed against the eager step ("graphed", on a GPU only). Correctness from the cases,
    speed from the share of the target the judge found (``speed_fraction``), after a correct answer."""
    passed = result.status == "PASS"
    anywhere = problem.kind == "interactive"
    fraction = result.extra.get("speed_fraction") if passed and (anywhere or device == "cuda") else None
    result.exercise.speed_graded = anywhere or device == "cuda"
    result.max_points_here = problem.max_points if anywhere else max_points_on(problem, device)
    result.correctness_points = problem.correctness_points if passed else 0.0
    result.speed_points = round(problem.speed_points * min(1.0, max(0.0, float(fraction))), 2) if fraction is not None else 0.0
    note = result.speed_note or result.extra.get("speed_note_text", "")
    if not passed:
        note = "no speed points without correctness"
    elif fraction is None and problem.speed_points:
        note = note or "needs a GPU: speed is graded only on a GPU"
    result.speed_note = note
    result.points = round(result.correctness_points + result.speed_points, 2)
    return result
