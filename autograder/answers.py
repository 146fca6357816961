"""The judge's stages for exercises answered in Python: exact answers (cost models, formulas,
classifications) and measurements checked against the grader's own on this GPU."""

from __future__ import annotations

import pickle
import secrets

from . import ceilings, exact, jsonable, measured
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


def grade_measured(g) -> None:
    """The learner's timings of operations against the judge's own measurement of them, made once the
    learner's process is gone."""
    entry = g.result.ceilings
    bandwidth = ceilings.copy_bandwidth(entry)
    ops = g.problem.make_ops(g.device)
    answers = []
    for index, op in enumerate(ops):
        scalars = {"flops": op.flops, "bytes_moved": op.bytes_moved, "peak_flops": ceilings.compute_peak(entry, op.dtype), "bandwidth": bandwidth}
        header, _ = g.learner.ask({"op": "answer", "measured_op": index}, pickle.dumps(scalars), timeout=g.remaining())
        answers.append(header)
    # The learner's process is gone before the judge measures the same operations itself.
    g.learner.end()
    for op, header in zip(ops, answers, strict=True):
        peak = ceilings.compute_peak(entry, op.dtype)
        seconds = {"once": measured.reference_seconds(op.call, g.device), "doubled": measured.reference_seconds(op.doubled, g.device) if op.doubled else None}
        g.result.cases.append(answer_case(header, op.name, lambda got, op=op, peak=peak, seconds=seconds: measured_mismatch(g.problem, got, op, peak, bandwidth, seconds)))
    g.pass_if_all("your measurements agree with the grader's", "some of your measurements disagree with the grader's")


def answer_case(header: dict, shown: str, mismatch, payload: bytes = b"") -> CaseResult:
    """One answer as a case of the result: right, wrong (and how), or no answer at all. ``payload``
    holds the bytes of any tensors in the answer."""
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
    return CaseResult(shown, found is None, found or "")


def measured_mismatch(problem, got, op, peak, bandwidth, seconds):
    passed, message = problem.judge(got, op, peak, bandwidth, seconds)
    return None if passed else (message or "does not agree with the grader's measurement")
