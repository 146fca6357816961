"""What an exercise is, for the grader: the contract every problem definition fills in.

A problem names the learner's function and its language, makes fresh inputs from a seed, knows the
exact answer (a float64 reference) and the library's answer at the task's precision, counts the
bytes and FLOPs one call must move and do, and says how a measured speed turns into points.
Problems register here under their names; the other kinds of exercise (KINDS) are defined beside
their judges (autograder.python_problems, .measured, .distributed, .compiled, .graphs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .metrics import SpeedMetric

LANGUAGES = ("triton", "cupy", "python")
# "At least as fast as the library" (solution_library_ratio) tolerates a tie within this band: two
# bandwidth-bound kernels that both read at the speed of HBM are equally fast, and the ratio of one
# honest kernel to its library moved by up to 3.5% between ten gradings in a row on an H200 (the
# reduction against cupy.sum, 0.985x to 1.020x: results/stability.json).
LEVEL_BAND = 0.02


@dataclass(frozen=True)
class LinearScale:
    """Speed points grow linearly from 0 at ``zero_at`` to full at ``full_at``.

    ``metric`` is what is scaled (autograder.metrics: the fraction of copy bandwidth, the ratio to the
    library, the fraction of the roofline).
    """

    metric: SpeedMetric
    zero_at: float
    full_at: float

    def fraction(self, value: float) -> float:
        if not math.isfinite(value):
            return 0.0
        return min(1.0, max(0.0, (value - self.zero_at) / (self.full_at - self.zero_at)))

    def describe(self) -> str:
        m = self.metric
        if m.fraction:
            return f"0 points at {m.level(self.zero_at)} {m.unit}, full at {m.level(self.full_at)}"
        return f"0 points at {m.level(self.zero_at)} the library, full at {m.level(self.full_at)} the library"


@dataclass(frozen=True)
class Baseline:
    """The library call a speed grade is measured against, as it really runs on one device.

    ``label`` names what ran ("SDPA flash backend"); ``run`` is the function to time, with the
    signature of ``Problem.library``; ``speed_scale`` turns the learner's ratio to it into points, or
    is None where this baseline is not the one the targets were measured against (the ratio is then
    shown, not graded, and ``note`` says why); ``extra_libraries`` are timed beside it, not graded.
    """

    label: str
    run: Callable[..., Any]
    speed_scale: LinearScale | None
    note: str = ""
    extra_libraries: tuple[tuple[str, Callable[..., Any]], ...] = ()


@dataclass
class Problem:
    """One graded exercise. Every callable takes and returns torch tensors (CuPy arrays are
    converted at the boundary, without copies, through DLPack).

    A size is an int (a length) or a tuple (a shape, or a shape plus options such as a dtype name or
    a causal flag); ``describe_size`` prints it.

    make_inputs(size, seed, device) -> dict of argument name -> tensor or Python scalar, in call order.
    reference(**inputs) -> the exact answer, computed in float64.
    library(**inputs) -> the library's answer at the task's precision (also the speed baseline); it
        sets any global state it depends on itself (TF32 off for an fp32 matmul) and restores it.
    bytes_moved(size) / flops(size) -> the minimum traffic and arithmetic of one call.
    compute_dtype -> the measured matmul ceiling ("float32", "tf32", "bfloat16", "float16") that caps
        the roofline and sets the physical FLOP floor.
    solution_target -> what the reference solution must reach on speed_scale's metric;
        solution_library_ratio, when set, is a further ratio to the library it must reach.
    extra_libraries -> (name, function) baselines timed in the same loop and reported, not graded.
    baseline(device) -> the Baseline that runs on that device, where the library's backend depends on
        the device (``baseline_for`` gives every problem's).
    min_compute_capability -> (major, minor) the exercise's hardware needs (fp8 tensor cores: (8, 9));
        on an older GPU correctness is graded under the Triton interpreter and speed is not graded.
    max_launches -> when set, the most launches of the learner's own kernels one call may make (counted
        by autograder.launch_count); max_reads -> when set, the most times one call may load any element
        of an input (counted by the Triton interpreter on a CPU: a one-pass exercise sets 1);
        solution_extra_ratio -> when set, the ratio to every extra library the reference solution must
        also reach; replay_values -> integer inputs that hold values, not structure (packed weights,
        zero points), drawn afresh like the floating-point ones when a CPU call is replayed
        (autograder.replay); indices and lengths keep theirs.
    error_model(**inputs) -> optional: an answer at the task's precision whose error, where larger
        than the library's, sets the tolerance instead (autograder.checking.derive_tolerance).
    """

    name: str
    title: str
    notebook: str
    function: str
    language: str
    make_inputs: Callable[[Any, int, str], dict]
    reference: Callable[..., Any]
    library: Callable[..., Any]
    library_name: str
    bytes_moved: Callable[[Any], float]
    flops: Callable[[Any], float]
    test_sizes: Sequence[Any]
    bench_sizes: Sequence[Any]
    speed_scale: LinearScale
    compute_dtype: str = "float32"
    solution_target: float = 0.0
    correctness_points: float = 2.0
    speed_points: float = 2.0
    out_dtype: str = "float32"
    tolerance_factor: float = 4.0
    allowed_library_kernels: tuple[str, ...] = (r"FillFunctor", r"fill_kernel")
    # triton.language functions this exercise's kernels may not call, the work it asks the learner to
    # write (tl.softmax in the softmax exercise): Triton inlines them, so they count as library work.
    refused_language: tuple[str, ...] = ()
    cpu_test_sizes: Sequence[Any] | None = None
    describe_size: Callable[[Any], str] | None = None
    solution_library_ratio: float | None = None
    extra_libraries: tuple[tuple[str, Callable[..., Any]], ...] = ()
    notes: dict = field(default_factory=dict)
    baseline: Callable[[Any], Baseline] | None = None
    min_compute_capability: tuple[int, int] | None = None
    max_launches: int | None = None
    max_reads: int | None = None
    solution_extra_ratio: float | None = None
    replay_values: tuple[str, ...] = ()
    error_model: Callable[..., Any] | None = None

    kind: ClassVar[str] = "kernel"

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise ValueError(f"{self.name}: language must be one of {LANGUAGES}")

    def baseline_for(self, device) -> Baseline:
        """What the speed grade is measured against on ``device`` ("cuda", "cuda:1", "cpu"), decided
        there: call it in the process that times the baseline."""
        if self.baseline is not None:
            return self.baseline(device)
        return Baseline(label=self.library_name, run=self.library, speed_scale=self.speed_scale, extra_libraries=tuple(self.extra_libraries))

    def size_label(self, size: Any) -> str:
        if self.describe_size is not None:
            return self.describe_size(size)
        return format_size(size)

    def solution_shortfalls(self, row: dict) -> list[str]:
        """What a benchmark row of the reference solution misses of its targets (empty: all met)."""
        missed = []
        metric = self.speed_scale.metric
        value = metric.of(row)
        if value < self.solution_target:
            missed.append(f"{metric.shown(value, self.library_name, digits=1)}, target {metric.level(self.solution_target)}")
        level = None if self.solution_library_ratio is None else self.solution_library_ratio * (1.0 - LEVEL_BAND)
        if level is not None and row.get("ratio", 0.0) < level:
            missed.append(f"{row.get('ratio', 0.0):.2f}x {self.library_name}, target {self.solution_library_ratio:.2f}x (level within {LEVEL_BAND:.0%})")
        if self.solution_extra_ratio is not None:
            for name, timing in row.get("extra_libraries", {}).items():
                extra = timing["median_ms"] / row["candidate"]["median_ms"]
                if extra < self.solution_extra_ratio * (1.0 - LEVEL_BAND):
                    missed.append(f"{extra:.2f}x {name}, target {self.solution_extra_ratio:.2f}x (level within {LEVEL_BAND:.0%})")
        return missed

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.speed_points

    @property
    def needs_gpu(self) -> bool:
        return self.language == "cupy"

    def sizes_for(self, device: str) -> list:
        """Test sizes first, then the benchmark sizes, which are checked for correctness too.
        Under the Triton interpreter only the small test sizes run: it executes every program
        instance in Python."""
        if device == "cpu":
            return list(self.cpu_test_sizes or self.test_sizes)
        return list(self.test_sizes) + list(self.bench_sizes)


def format_size(size: Any) -> str:
    """1,000,003 for a length; 4096x4096 for a shape; options after the shape: 4x32x4096x128 causal."""
    if isinstance(size, int):
        return f"{size:,}"
    if isinstance(size, tuple):
        dims = [str(d) for d in size if isinstance(d, int) and not isinstance(d, bool)]
        options = [str(d) for d in size if isinstance(d, str)] + ["causal" for d in size if d is True]
        return " ".join(["x".join(dims), *options]).strip()
    return str(size)


_REGISTRY: dict[str, Problem] = {}


def register(problem):
    """Add a problem to the registry under its name (autograder.registry looks problems up)."""
    if problem.name in _REGISTRY:
        raise ValueError(f"problem {problem.name} is registered twice")
    _REGISTRY[problem.name] = problem
    return problem


# Every problem class says which of these it is: a kernel timed against a library ("kernel"), a
# Python answer checked exactly ("exact"), one checked against the grader's own measurement on this
# GPU ("measured", autograder.measured), code run as the ranks of a torch.distributed group
# ("distributed", autograder.distributed), a stateful object driven through traces of calls ("trace"),
# an object whose decisions the grader acts on and scores ("interactive"), code judged on what
# torch.compile did with it ("compiled", autograder.compiled), a wrapper around the grader's step
# timed against it ("graphed", autograder.graphs), or a training step whose peak memory the judge
# measures from outside its process ("memory", autograder.memory_step).
KINDS = ("kernel", "exact", "measured", "distributed", "trace", "interactive", "compiled", "graphed", "memory")


def is_exact(problem) -> bool:
    return problem.kind == "exact"


def is_measured(problem) -> bool:
    """Graded against the grader's own measurement on this GPU (autograder.measured)."""
    return problem.kind == "measured"


def is_trace(problem) -> bool:
    """A class driven through traces of calls and checked against a model (TraceProblem)."""
    return problem.kind == "trace"


def is_interactive(problem) -> bool:
    """An object whose decisions the grader carries out and scores (InteractiveProblem)."""
    return problem.kind == "interactive"


def is_distributed(problem) -> bool:
    """Run as N ranks of a torch.distributed group (autograder.distributed)."""
    return problem.kind == "distributed"


def has_speed_grade(problem) -> bool:
    """A kernel timed against its library by the kernel stages (a distributed problem's speed, where
    it has one, is the distributed stages' own)."""
    return problem.kind == "kernel"
