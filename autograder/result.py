"""What a grading found and decided, typed: a case, a timing, a benchmark row, the whole result.

The judge fills a ProblemResult as its stages run (autograder.judge_grading), autograder.verdict decides
the verdict and points from it, autograder.report renders it. Between processes and in the files a
run records it travels as JSON: ``to_dict`` writes the keys the result has always had, ``from_dict``
reads them back (keys it does not know are kept as they came).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .problem import format_size


def _plain(value):
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Record:
    """to_dict/from_dict for the dataclasses below: None means "not there" (the key is left out),
    ``extra`` holds keys a newer or older grader wrote."""

    _nested: dict = {}

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "extra" or value is None:
                continue
            out[f.name] = _plain(value)
        out.update(getattr(self, "extra", {}))
        return out

    @classmethod
    def from_dict(cls, data):
        if isinstance(data, cls):
            return data
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {k: v for k, v in data.items() if k in known}
        for name, kind in cls._nested.items():
            if values.get(name) is not None:
                values[name] = kind(values[name])
        rest = {k: v for k, v in data.items() if k not in known}
        if rest and "extra" not in {f.name for f in fields(cls)}:
            raise ValueError(f"{cls.__name__} has no fields {sorted(rest)}")
        return cls(**values, **({"extra": rest} if rest else {}))


def _size(size):
    """Sizes travel as JSON: a tuple as its repr."""
    return size if isinstance(size, (int, float, str)) else repr(size)


@dataclass
class CaseResult(_Record):
    """One correctness case (a size of a kernel exercise, one answer of a Python exercise)."""

    size: Any
    passed: bool
    message: str = ""
    max_error: float | None = None
    allowed_error: float | None = None
    mismatches: list | None = None
    seconds: float | None = None
    split_seconds: dict | None = None
    worker_seconds: float | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.size = _size(self.size)


@dataclass
class Timing(_Record):
    """The judge's charge per call at one size: median, its standard error, how many calls. A
    library timed beside the graded one also carries its ratio and FLOP/s."""

    median_ms: float
    stderr_ms: float
    calls: int
    ratio: float | None = None
    flop_per_s: float | None = None


@dataclass
class SpeedRow(_Record):
    """One benchmark size: the learner's and the library's timings and what they mean on this GPU.
    The judge writes the measured part; autograder.verdict adds the rest (``annotated``). A chart
    may be drawn from rows that carry only what it plots, so every field but the size is optional."""

    size: Any
    candidate: Timing | None = None
    library: Timing | None = None
    bytes_moved: float | None = None
    flops: float | None = None
    floor_ms: float | None = None
    wrong_timed_outputs: int = 0
    calls_per_window: int | None = None
    extra_libraries: dict[str, Timing] | None = None
    charged_more: dict | None = None
    segments_us: dict | None = None
    bandwidth: float | None = None
    library_bandwidth: float | None = None
    ratio: float | None = None
    # Filled in by autograder.verdict from this GPU's ceilings.
    size_label: str | None = None
    copy_fraction: float | None = None
    flop_per_s: float | None = None
    library_flop_per_s: float | None = None
    intensity: float | None = None
    peak_flop_per_s: float | None = None
    roofline_fraction: float | None = None
    below_floor: bool | None = None
    extra: dict = field(default_factory=dict)

    _nested = {"candidate": Timing.from_dict, "library": Timing.from_dict}

    def __post_init__(self) -> None:
        self.size = _size(self.size)
        if self.extra_libraries is not None:
            self.extra_libraries = {name: Timing.from_dict(t) for name, t in self.extra_libraries.items()}

    @property
    def annotated(self) -> bool:
        return self.copy_fraction is not None

    @property
    def label(self) -> str:
        return self.size_label or (f"{self.size:,}" if isinstance(self.size, int) else str(self.size))


@dataclass
class Honesty(_Record):
    """Whether the learner's own kernel did the work, and what was seen."""

    ok: bool
    message: str
    kernels: list | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class BaselineRun(_Record):
    """The library call that was timed where the grading ran, and whether it is the one the speed
    targets were set against (``graded``)."""

    label: str
    note: str = ""
    graded: bool = True


@dataclass
class MetricValue(_Record):
    """The speed metric's value over the benchmark sizes (geometric mean)."""

    name: str
    value: float


@dataclass
class Exercise(_Record):
    """What the report says about the exercise, written into the result when it is scored so that
    the report never looks the problem up again."""

    name: str
    title: str
    correctness_points: float
    speed_points: float
    speed_graded: bool
    library_name: str = ""
    scale_text: str = ""
    metric_name: str = ""
    compute_dtype: str = "float32"

    @classmethod
    def of(cls, problem) -> Exercise:
        from . import problem as problem_mod

        graded = problem_mod.has_speed_grade(problem)
        scale = getattr(problem, "speed_scale", None)
        return cls(
            name=problem.name,
            title=problem.title,
            correctness_points=float(problem.correctness_points),
            speed_points=float(problem.speed_points),
            speed_graded=graded,
            library_name=getattr(problem, "library_name", ""),
            scale_text=scale.describe() if graded else "",
            metric_name=scale.metric.name if graded else "",
            compute_dtype=getattr(problem, "compute_dtype", "float32"),
        )

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.speed_points

    def size_label(self, size) -> str:
        return format_size(size)


@dataclass
class ProblemResult(_Record):
    """One grading: the judge's facts (cases, speed rows, honesty, ceilings, ...), then the
    verdict and points autograder.verdict decided from them."""

    problem: str
    status: str = "ERROR"
    message: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    speed: list[SpeedRow] = field(default_factory=list)
    device: str | None = None
    device_name: str | None = None
    versions: dict | None = None
    sandbox: str | None = None
    # Whether the learner's thread was kept from the channel to the judge (autograder.channel).
    channel: str | None = None
    ceilings: dict | None = None
    honesty: Honesty | None = None
    baseline: BaselineRun | None = None
    calibration: dict | None = None
    calibration_note: str | None = None
    switch_us: dict | None = None
    stage_seconds: dict | None = None
    traceback: str | None = None
    output: str | None = None
    # The verdict's part (autograder.verdict.score).
    title: str | None = None
    max_points: float | None = None
    max_points_here: float | None = None
    correctness_points: float | None = None
    speed_points: float | None = None
    points: float | None = None
    speed_note: str | None = None
    speed_metric: MetricValue | None = None
    exercise: Exercise | None = None
    extra: dict = field(default_factory=dict)

    _nested = {"honesty": Honesty.from_dict, "baseline": BaselineRun.from_dict, "speed_metric": MetricValue.from_dict, "exercise": Exercise.from_dict}

    def __post_init__(self) -> None:
        self.cases = [CaseResult.from_dict(c) for c in self.cases]
        self.speed = [SpeedRow.from_dict(r) for r in self.speed]

    @property
    def all_cases_passed(self) -> bool:
        return all(c.passed for c in self.cases)

    def stage_took(self, name: str, seconds: float) -> None:
        """Where a grading's time goes, stage by stage."""
        if self.stage_seconds is None:
            self.stage_seconds = {}
        self.stage_seconds[name] = round(seconds, 3)

    def calibrated(self, when: str, switch_us: float) -> None:
        if self.calibration is None:
            self.calibration = {}
        self.calibration[when] = {"switch_us": switch_us}
