"""The judge's stages for exercises answered in Python: exact answers (cost models, formulas,
classifications) and measurements checked against the grader's own on this GPU."""

from __future__ import annotations

import pickle
import secrets

from . import ceilings, exact, jsonable
from .result import CaseResult


def grade_exact(g) -> None:
    """The exact answers: each case drawn here, the learner's answer compared with the reference (by
    the problem's own judge where it has one, given the judge's untouched copy of the case)."""
    for case in g.problem.make_cases(secrets.randbits(62)):
        expected = g.problem.reference(**pickle.loads(pickle.dumps(case)))
        shown = exact.describe_case(case, g.problem)
        header, payload = g.learner.ask({"op": "answer", "keywords": True}, pickle.dumps(case), timeout=g.remaining())
        if header.get("error", {}).get("refused"):
            g.fail_hard("REJECT", header["error"]["message"])
            return
        g.result.cases.append(answer_case(header, shown, lambda got, e=expected, c=case: exact.judge(g.problem, got, e, c), payload))
    g.pass_if_all("your answers are right", "some answers are wrong")


def grade_traces(g) -> None:
    """A stateful class: each trace sent whole to the learner's worker (one fresh object, every call in
    order), its answers checked here against the problem's model. The worker answers within the
    grading's deadline or the grading ends with a time-out: a class that loops forever costs its own
    exercise, never a hang."""
    for trace in g.problem.make_traces(secrets.randbits(62)):
        request = {"op": "script", "constructor": trace.constructor, "calls": [list(call) for call in trace.calls]}
        header, _ = g.learner.ask(request, pickle.dumps(None), timeout=min(TRACE_TIMEOUT_S, g.remaining()))
        if header.get("error", {}).get("refused"):
            g.fail_hard("REJECT", header["error"]["message"])
            return
        g.result.cases.append(CaseResult.from_dict(trace_case(g.problem, trace, header)))
        if len([c for c in g.result.cases if not c.passed]) >= MAX_FAILED_TRACES:
            break
    g.pass_if_all("your class behaves like the model on every trace", "your class went wrong on some traces")


# One trace is at most a few thousand calls of plain Python: seconds at worst. A class that takes
# longer loops forever somewhere.
TRACE_TIMEOUT_S = 30.0
# Traces after this many failures add nothing the first ones do not already say.
MAX_FAILED_TRACES = 3


def trace_case(problem, trace, header: dict) -> dict:
    """One trace as a case: the first call that raised or answered wrongly, or a pass."""
    answers = []
    try:
        answers = [jsonable.decode(a) for a in header.get("answers", [])]
    except ValueError:
        return {"size": trace.label, "passed": False, "message": "the answers could not be read"}
    if "error" in header or "wrong_type" in header:
        index = header.get("at", len(answers))
        method, kwargs = trace.calls[index]
        shown = f"{method}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})" if index >= 0 else f"{problem.function}(...)"
        found = problem.check(trace, answers)
        if found:
            return {"size": trace.label, "passed": False, "message": found}
        if "wrong_type" in header:
            return {"size": trace.label, "passed": False, "message": f"call {index} {shown} {header['wrong_type']}"}
        error = header["error"]
        return {"size": trace.label, "passed": False, "message": f"call {index} {shown} raised {error['type']}: {error['message'][:300]}"}
    if len(answers) != len(trace.calls):
        return {"size": trace.label, "passed": False, "message": f"{len(answers)} answers to {len(trace.calls)} calls"}
    found = problem.check(trace, answers)
    return {"size": trace.label, "passed": found is None, "message": found or ""}


class LearnerFault(Exception):
    """A call of the learner's object raised, answered with something that is not plain data, or was refused."""


class LearnerObject:
    """The judge's handle on the learner's object in the worker: each call is one round trip, under
    the grading's deadline and at most TRACE_TIMEOUT_S."""

    def __init__(self, g) -> None:
        self.g = g

    def new(self, **constructor) -> None:
        self._ask({"op": "script", "constructor": constructor, "calls": []}, f"{self.g.problem.function}(...)")

    def call(self, method: str, **kwargs):
        shown = f"{method}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
        header = self._ask({"op": "script", "calls": [[method, kwargs]]}, shown)
        try:
            return jsonable.decode(header["answers"][0])
        except (ValueError, IndexError, KeyError):
            raise LearnerFault(f"{shown}: the answer could not be read") from None

    def _ask(self, request: dict, shown: str) -> dict:
        header, _ = self.g.learner.ask(request, pickle.dumps(None), timeout=min(TRACE_TIMEOUT_S, self.g.remaining()))
        if "error" in header:
            error = header["error"]
            if error.get("refused"):
                self.g.fail_hard("REJECT", error["message"])
            raise LearnerFault(f"{shown} raised {error['type']}: {error['message'][:300]}")
        if "wrong_type" in header:
            raise LearnerFault(f"{shown} {header['wrong_type']}")
        return header

    def end(self) -> None:
        """The learner's process is no longer needed: stopped before the judge times anything."""
        self.g.learner.end()


def grade_interactive(g) -> None:
    """An object whose decisions the problem's own code carries out (``play``, in this process, given
    the grading's device): its cases decide correctness, its measured fraction the speed points."""
    outcome = g.problem.play(LearnerObject(g), secrets.randbits(62), g.device)
    if g.stopped:
        return
    g.result.cases.extend(CaseResult.from_dict(case) for case in outcome["cases"])
    g.result.extra["speed_fraction"] = float(outcome.get("speed_fraction", 0.0))
    g.result.speed_note = outcome.get("speed_note", "")
    if "measured" in outcome:
        g.result.extra["measured"] = outcome["measured"]
    g.pass_if_all(outcome.get("good", "every check passed"), outcome.get("bad", "some checks failed"))


def grade_measured(g) -> None:
    """The learner's timings of operations against the judge's own measurement of them, made once the
    learner's process is gone."""
    entry = g.result.ceilings
    bandwidth = ceilings.copy_bandwidth(entry)
    ops = g.problem.make_ops(g.device)
    answers = []
    for index, op in enumerate(ops):
        scalars = {"flops": op.flops, "bytes_moved": op.bytes_moved, "peak_flops": ceilings.compute_peak(entry, op.dtype), "bandwidth": bandwidth}
        scalars = {name: value for name, value in scalars.items() if name in g.problem.arguments}
        header, _ = g.learner.ask({"op": "answer", "measured_op": index}, pickle.dumps(scalars), timeout=g.remaining())
        answers.append(header)
    # The learner's process is gone before the judge measures the same operations itself.
    g.learner.end()
    for op, header in zip(ops, answers, strict=True):
        peak = ceilings.compute_peak(entry, op.dtype)
        evidence = g.problem.evidence(op, g.device)
        g.result.cases.append(answer_case(header, op.name, lambda got, op=op, peak=peak, evidence=evidence: measured_verdict(g.problem, got, op, peak, bandwidth, evidence)))
    g.pass_if_all("your measurements agree with the grader's", "some of your measurements disagree with the grader's")


def answer_case(header: dict, shown: str, mismatch, payload: bytes = b"") -> CaseResult:
    """One answer as a case of the result: right, wrong (and how), or no answer at all. ``payload``
    holds the bytes of any tensors in the answer. ``mismatch(got)`` returns what is wrong (None when
    nothing is), or (passed, message) where a right answer has something to say too."""
    if "error" in header:
        error = header["error"]
        return CaseResult(shown, False, f"raised {error['type']}: {error['message'][:300]}")
    if "wrong_type" in header:
        return CaseResult(shown, False, header["wrong_type"])
    try:
        got = jsonable.decode(header.get("answer"), payload=payload)
    except ValueError:
        return CaseResult(shown, False, "the answer could not be read")
    found = mismatch(got)
    if isinstance(found, tuple):
        return CaseResult(shown, *found)
    return CaseResult(shown, found is None, found or "")


def measured_verdict(problem, got, op, peak, bandwidth, evidence) -> tuple[bool, str]:
    """(passed, message): a right answer's message says what the grader measured beside it."""
    passed, message = problem.judge(got, op, peak, bandwidth, evidence)
    return bool(passed), message or ("" if passed else "does not agree with the grader's measurement")
