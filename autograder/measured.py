"""Exercises graded against the grader's own measurement of the same GPU.

The learner writes a function that times an operation and places it on the roofline (or names its
regime). The grader hands it real operations, one at a time, as zero-argument callables with their
FLOPs and minimum bytes; then it times each operation itself with the protocol every speed grade
uses (L2 flushed, one call per event pair, median) and checks that the learner's numbers agree
with its own. A timer that forgets to synchronise, counts the first (compiling) call, or times
something else disagrees by far more than the tolerance.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

# Two careful timings of the same call (do_bench's median against the grader's) agree to a few
# percent for calls of 0.1 ms and more; a quarter either way leaves room for clocks and noise and
# still catches a missing synchronisation (a factor of 10 or more) or a compile counted in.
TIME_AGREEMENT = 1.25
REFERENCE_CALLS = 15
# The arguments that hand the learner a callable it can run (and time).
OPERATION_ARGUMENTS = ("op", "step", "op_doubled")


@dataclass
class MeasuredOp:
    """One operation the learner measures: ``call()`` runs it once on the device; ``doubled()``,
    when present, runs the same operation on twice the work. ``operation`` says what it computes as
    plain data (its kind, sizes and dtype), for an exercise that predicts instead of measuring."""

    name: str
    call: Callable[[], Any]
    flops: float
    bytes_moved: float
    dtype: str = "float32"
    doubled: Callable[[], Any] | None = None
    operation: dict = field(default_factory=dict)


@dataclass
class MeasuredProblem:
    """make_ops(device) -> the operations to measure. judge(got, op, peak, bandwidth, evidence) ->
    (passed, message) compares the learner's answer on ``op`` with the grader's own measurement:
    ``measure(op, device)`` when the problem has one (a profile, say), otherwise its times
    ``{"once": s, "doubled": s or None}``."""

    name: str
    title: str
    notebook: str
    function: str
    arguments: tuple[str, ...]
    make_ops: Callable[[str], list]
    judge: Callable[..., tuple[bool, str]]
    correctness_points: float = 2.0
    language: str = "python"
    speed_points: float = 0.0
    notes: dict = field(default_factory=dict)
    measure: Callable[[MeasuredOp, str], Any] | None = None
    needs_gpu_reason: str = ""
    compute_dtype: str = "float32"
    # The matmul rates its operations are held against besides compute_dtype's (each op's dtype).
    ceiling_dtypes: tuple = ()
    kind: ClassVar[str] = "measured"

    def __post_init__(self) -> None:
        if not self.needs_gpu_reason:
            self.needs_gpu_reason = (
                "holds your predictions against the grader's timing of the same operations on an NVIDIA GPU"
                if self.predicts
                else "times operations on an NVIDIA GPU and compares your numbers with the grader's own measurement of that GPU"
            )

    @property
    def predicts(self) -> bool:
        """The learner is handed no operation to run (only its description and the ceilings): the
        answer is a prediction, and on a GPU the learner's worker runs with no GPU visible
        (session.Workers.restart_learner): nothing it runs can time the operations."""
        return not set(self.arguments) & set(OPERATION_ARGUMENTS)

    @property
    def max_points(self) -> float:
        return self.correctness_points

    @property
    def needs_gpu(self) -> bool:
        return True

    def evidence(self, op: MeasuredOp, device: str):
        """The grader's own measurement of ``op``, made where the learner's code does not run."""
        if self.measure is not None:
            return self.measure(op, device)
        return {"once": reference_seconds(op.call, device), "doubled": reference_seconds(op.doubled, device) if op.doubled else None}


def reference_seconds(call: Callable[[], Any], device: str) -> float:
    """The grader's time for one call: its GPU timer (L2 flushed, events, median) on a GPU; the
    median of wall-clock calls on a CPU."""
    call()
    if device == "cuda":
        from . import timing

        timer = timing.Timer()
        samples = [timer.time_call(call)[0] * 1e-3 for _ in range(REFERENCE_CALLS)]
    else:
        samples = []
        for _ in range(REFERENCE_CALLS):
            started = time.perf_counter()
            call()
            samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def agree(got: float, expected: float, factor: float = TIME_AGREEMENT) -> bool:
    return isinstance(got, (int, float)) and math.isfinite(got) and got > 0 and expected / factor <= got <= expected * factor


def check(problem, fn: Callable, device: str, entry: dict) -> list[dict]:
    """Every operation of the problem: the learner's function on it, then the grader's own
    measurement, then the judgement. An exception fails that operation only."""
    from . import ceilings

    bandwidth = ceilings.copy_bandwidth(entry)
    results = []
    for op in problem.make_ops(device):
        peak = ceilings.compute_peak(entry, op.dtype)
        try:
            got = fn(*_arguments(problem, op, peak, bandwidth))
        except Exception as exc:  # noqa: BLE001 -- the learner's exception is this operation's verdict
            results.append({"size": op.name, "passed": False, "message": f"raised {type(exc).__name__}: {str(exc)[:300]}"})
            continue
        passed, message = problem.judge(copy.deepcopy(got), op, peak, bandwidth, problem.evidence(op, device))
        results.append({"size": op.name, "passed": passed, "message": message})
    return results


def _arguments(problem, op: MeasuredOp, peak: float, bandwidth: float) -> list:
    available = {"op": op.call, "step": op.call, "op_doubled": op.doubled, "operation": op.operation, "flops": op.flops, "bytes_moved": op.bytes_moved, "peak_flops": peak, "bandwidth": bandwidth}
    return [available[name] for name in problem.arguments]


def ms(seconds: float) -> str:
    if not isinstance(seconds, (int, float)):
        return repr(seconds)
    return f"{seconds * 1e3:.4f} ms"
