"""Exercises answered in plain Python, graded in the judge on data the learner's worker sends back:
one right answer (ExactProblem), a stateful class driven through traces of calls (TraceProblem), or
an object whose decisions the grader carries out and scores (InteractiveProblem)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar


class CorrectnessOnly:
    """A Python exercise graded on correctness alone, on any machine."""

    @property
    def max_points(self) -> float:
        return self.correctness_points

    @property
    def needs_gpu(self) -> bool:
        return False


class CorrectnessAndSpeed:
    """A Python exercise with correctness and speed points whose correctness grades on any machine
    (its speed part may still need GPUs, and says so in its report)."""

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.speed_points

    @property
    def needs_gpu(self) -> bool:
        return False


@dataclass
class ExactProblem(CorrectnessOnly):
    """A pure-Python exercise with one right answer: a cost model, a formula, a classification.

    make_cases(seed) -> list of keyword-argument dicts (fixed edge cases first, then random ones
    drawn from the seed); reference(**case) -> the answer. Numbers must agree to ``rel_tol``
    (rounding only), strings and booleans exactly, dicts key by key, sequences item by item.
    Cases and answers may hold tensors (autograder.jsonable carries them back from the worker as
    data); ``judge(got, expected, case)``, when given, decides instead: None when the answer is
    right, else what is wrong (a bit-exact packing, or an error within a bound derived from the case).
    Graded for correctness on any machine; there is no speed part.
    """

    name: str
    title: str
    notebook: str
    function: str
    make_cases: Callable[[int], list]
    reference: Callable[..., Any]
    correctness_points: float = 1.0
    rel_tol: float = 1e-9
    language: str = "python"
    speed_points: float = 0.0
    notes: dict = field(default_factory=dict)
    judge: Callable[[Any, Any, dict], str | None] | None = None
    # describe_case(case) -> how a case is named in the report, where its arguments are too long to print.
    describe_case: Callable[[dict], str] | None = None
    kind: ClassVar[str] = "exact"


@dataclass
class Trace:
    """One sequence of calls on one fresh object of the learner's class: the judge sends it whole to the
    learner's worker, which builds ``ClassName(**constructor)``, calls ``calls`` in order (each a
    ``(method, keyword arguments)`` pair) and answers with every result as plain data. ``expected`` is
    the problem's own record of what a right object does (a model's states); it never leaves the judge."""

    label: str
    constructor: dict
    calls: list
    expected: Any = None


@dataclass
class TraceProblem(CorrectnessOnly):
    """A pure-Python exercise whose answer is a stateful object (an allocator, a scheduler): the learner
    writes a class, and the grader drives fresh instances of it through traces of calls and checks the
    results against a simple model of the same object.

    make_traces(seed) -> list of Trace: fixed (hidden) scenarios first, then random operation sequences
    drawn from the seed; every call in a trace is valid for the model, so a right class never raises.
    check(trace, answers) -> None when the answers (one per call, as plain data) are right, else a
    sentence naming the first call that went wrong and how. ``arguments`` are the constructor's
    keyword names. Graded for correctness on any machine; there is no speed part.
    """

    name: str
    title: str
    notebook: str
    function: str
    arguments: tuple
    make_traces: Callable[[int], list]
    check: Callable[[Trace, list], str | None]
    correctness_points: float = 2.0
    language: str = "python"
    speed_points: float = 0.0
    notes: dict = field(default_factory=dict)
    kind: ClassVar[str] = "trace"


@dataclass
class InteractiveProblem(CorrectnessAndSpeed):
    """A pure-Python exercise whose answer is an object that makes decisions (a scheduler) while the
    grader's own code acts on them: ``play(learner, seed, device)`` runs in the judge, builds the
    learner's object with ``learner.new(**constructor)``, asks it with ``learner.call(method, **kwargs)``
    (one round trip to the learner's worker each; a ``LearnerFault`` when the call raises, returns what
    is not plain data or does not answer in time), may stop the learner's process with ``learner.end()``
    before it times anything, and returns ``{"cases": [...], "speed_fraction": f, "speed_note": "..."}``:
    the cases decide correctness, ``f`` (0 to 1) the share of the speed points, which are earned on
    any machine since ``play`` measures in units of its own on a CPU (model steps) and may time its
    own replay on the grading's ``device`` (the scheduler's tokens/s on a GPU). ``solution_target``
    is what the reference solution's measured value must reach."""

    name: str
    title: str
    notebook: str
    function: str
    arguments: tuple
    play: Callable[[Any, int], dict]
    correctness_points: float = 2.0
    speed_points: float = 2.0
    solution_target: float = 0.0
    language: str = "python"
    notes: dict = field(default_factory=dict)
    kind: ClassVar[str] = "interactive"
