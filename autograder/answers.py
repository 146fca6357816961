"""The judge's stages for exercises answered in Python: exact answers (cost models, formulas,
classifications) and measurements checked against the grader's own on this GPU."""

from __future__ import annotations

import pickle
import secrets

from . import ceilings, exact, jsonable


def grade_exact(g) -> None:
    """The exact answers: each case drawn here, the learner's answer compared with the reference."""
    for case in g.problem.make_cases(secrets.randbits(62)):
        expected = g.problem.reference(**pickle.loads(pickle.dumps(case)))
        shown = exact.describe(g.problem, case)
        header, _ = g.learner.ask({"op": "answer", "keywords": True}, pickle.dumps(case), timeout=g.remaining())
        if header.get("error", {}).get("refused"):
            g.fail_hard("REJECT", header["error"]["message"])
            return
        g.result["cases"].append(answer_case(header, shown, lambda got, e=expected: exact.mismatch(got, e, g.problem.rel_tol)))
    g.pass_if_all("your answers are right", "some answers are wrong")


def grade_measured(g) -> None:
    """The learner's timings of operations against the judge's own measurement of them, made once the
    learner's process is gone."""
    entry = g.result["ceilings"]
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
        g.result["cases"].append(answer_case(header, op.name, lambda got, op=op, peak=peak, evidence=evidence: measured_mismatch(g.problem, got, op, peak, bandwidth, evidence)))
    g.pass_if_all("your measurements agree with the grader's", "some of your measurements disagree with the grader's")


def answer_case(header: dict, shown: str, mismatch) -> dict:
    """One answer as a case of the result: right, wrong (and how), or no answer at all."""
    if "error" in header:
        error = header["error"]
        return {"size": shown, "passed": False, "message": f"raised {error['type']}: {error['message'][:300]}"}
    if "wrong_type" in header:
        return {"size": shown, "passed": False, "message": header["wrong_type"]}
    try:
        got = jsonable.decode(header.get("answer"))
    except ValueError:
        return {"size": shown, "passed": False, "message": "the answer could not be read"}
    found = mismatch(got)
    return {"size": shown, "passed": found is None, "message": found or ""}


def measured_mismatch(problem, got, op, peak, bandwidth, evidence):
    passed, message = problem.judge(got, op, peak, bandwidth, evidence)
    return None if passed else (message or "does not agree with the grader's measurement")
