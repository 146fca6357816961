"""The judge's side of a memory exercise (autograder.memory_step): two fresh workers on the CPU, the
plain step measured in the trusted one and the learner's step in the other, each from outside
(autograder.rss), then the gradients, the loss and the peaks compared here."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field

import numpy as np

from . import osguard, rss
from .memory_step import WORKER_ENV
from .result import CaseResult
from .session import Session

MB = 1 << 20
# The loss is one float32 reduction: two runs of the same maths agree to a few units of its last place.
LOSS_TOLERANCE = 1e-5


@dataclass
class Measured:
    """One step as the judge saw it: its peak above the memory held before it, and what it left."""

    peak: int = 0
    how: str = ""
    loss: float = float("nan")
    gradients: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    failure: str | None = None


def grade(g) -> None:
    problem = g.problem
    # The grading's first worker only showed that the module loads; the measured ones start fresh.
    g.learner.end()
    seed = secrets.randbits(62)
    trusted = _start(g, "library", seed)
    learner = _start(g, "learner", seed)
    # The learner's step first: a step that fails costs no plain step, and the learner's process is
    # gone before the trusted one runs.
    mine = measure(g, learner, load=True)
    learner.end(spare=(trusted.process.pid,))
    g.stage("your step measured")
    if mine.failure:
        trusted.end()
        g.fail_hard("FAIL", mine.failure)
        return
    plain = measure(g, trusted, load=False)
    trusted.end()
    g.stage("plain step measured")
    if plain.failure:
        g.fail_hard("ERROR", f"the grader's plain step failed: {plain.failure}")
        return
    g.result.cases = [CaseResult.from_dict(case) for case in judge_step(problem, plain, mine)]
    g.result.extra["measured"] = {"plain_peak_bytes": plain.peak, "peak_bytes": mine.peak, "how": mine.how}
    g.pass_if_all("the same gradients, with a lower peak", "see the failing checks")


def _start(g, role: str, seed: int) -> Session:
    folder = os.path.join(g.workdir, f"{role}-memory")
    os.makedirs(folder, exist_ok=True)
    session = Session(role, "cpu", folder, os.path.join(folder, "output.log"), no_triton=True, env=WORKER_ENV)
    setup = {"language": "python", "module": g.job["module"], "entry": g.job["entry"], "problem": g.problem.name, "kind": "memory", "writable": [], "memory_seed": seed}
    session.configure(setup, start_timeout=g.remaining())
    return session


def measure(g, session: Session, load: bool) -> Measured:
    """The step in ``session``'s worker: the high-water mark reset and the resident set read before
    the learner's module is loaded, the mark read again once the gradients are back."""
    session.wait_ready()
    pid = session.process.pid
    reset = rss.reset_peak(pid)
    start, threads = rss.status(pid), rss.threads(pid)
    before, data_before = start.get("VmRSS", 0), rss.data_bytes(start)
    if load:
        header, _ = session.ask({"op": "load", "module": g.job["module"], "entry": g.job["entry"], "arguments": list(g.problem.arguments)}, timeout=g.remaining())
        if not header.get("loaded"):
            error = header.get("error") or {}
            return Measured(failure=header.get("missing") or f"your code failed while being loaded: {error.get('type')}: {error.get('message')}")
    with rss.Sampler(pid) as sampler:
        header, _ = session.ask({"op": "harness", "action": "step" if load else "plain"}, timeout=g.remaining())
    if "error" in header:
        error = header["error"]
        return Measured(failure=f"your step raised {error['type']}: {error['message'][:600]}")
    if "wrong_type" in header:
        return Measured(failure=header["wrong_type"])
    left = rss.threads(pid) - threads
    if load and left > 0:
        return Measured(failure=f"your step left {left} thread(s) running after it returned: the step must be over when it returns")
    answer, data = session.ask({"op": "harness", "action": "gradients"}, timeout=g.remaining())
    if sampler.children or osguard.descendants(pid):
        return Measured(failure="your step started another process: the step must run in its own")
    high = rss.status(pid).get("VmHWM", 0) if reset else 0
    # The larger of two readings: the resident set's high-water mark (exact, but read against a
    # baseline the step can lower by dropping its program's file pages), and the sampled peak of its
    # data alone (anonymous and shared memory, which no such move lowers).
    resident = max(high, sampler.peak) - before
    own_data = sampler.data_peak - data_before
    peak = max(resident, own_data)
    if own_data > resident:
        how = "your process's own data (anonymous memory) sampled every 2 ms: its resident set fell below where it started"
    elif reset:
        how = "the kernel's high-water mark of resident memory"
    else:
        how = "resident memory sampled every 2 ms"
    offset, gradients = 0, {}
    for name, shape in answer["found"]:
        count = int(np.prod(shape))
        gradients[name] = np.frombuffer(data, dtype=np.float32, count=count, offset=offset).reshape(shape)
        offset += 4 * count
    return Measured(peak=peak, how=how, loss=answer["loss"], gradients=gradients, missing=answer["missing"])


def judge_step(problem, plain: Measured, mine: Measured) -> list[dict]:
    """The three checks, each a case of the report: gradients, loss, peak."""
    return [_gradients_case(problem, plain, mine), _loss_case(plain, mine), _peak_case(problem, plain, mine)]


def _gradients_case(problem, plain: Measured, mine: Measured) -> dict:
    if mine.missing:
        return _case("gradients", False, f"{len(mine.missing)} parameters have no gradient after your step (the first: {mine.missing[0]}): call backward on the loss inside lean_training_step")
    worst, worst_name, worst_error, worst_bound = -1.0, "", 0.0, 0.0
    for name, expected in plain.gradients.items():
        got = mine.gradients.get(name)
        bound = problem.grad_tolerance * float(np.max(np.abs(expected))) + 1e-12
        error = float(np.max(np.abs(got.astype(np.float64) - expected))) if got is not None else float("inf")
        error = error if np.isfinite(error) else float("inf")
        if error / bound > worst:
            worst, worst_name, worst_error, worst_bound = error / bound, name, error, bound
    if worst > 1.0:
        return _case("gradients", False, f"the gradient of {worst_name} is off by {worst_error:.3g} (allowed {worst_bound:.3g}, {problem.grad_tolerance:g} of its largest entry): the step must compute the same maths in float32")
    return _case("gradients", True, f"every parameter's gradient matches the plain step's (worst: {worst_name}, {worst:.0%} of its tolerance)")


def _loss_case(plain: Measured, mine: Measured) -> dict:
    error = abs(mine.loss - plain.loss)
    if not error <= LOSS_TOLERANCE * abs(plain.loss):
        return _case("loss", False, f"your step returned a loss of {mine.loss:.7g}; model(x).square().mean() is {plain.loss:.7g}")
    return _case("loss", True, f"{mine.loss:.7g}")


def _peak_case(problem, plain: Measured, mine: Measured) -> dict:
    fraction = mine.peak / plain.peak if plain.peak > 0 else float("inf")
    message = (f"your step's peak: {mine.peak / MB:.1f} MB above what the model and input already held, {fraction:.0%} of the plain step's "
               f"{plain.peak / MB:.1f} MB (at most {problem.max_fraction:.0%}; {mine.how})")
    return _case("peak memory", fraction <= problem.max_fraction, message)


def _case(size: str, passed: bool, message: str) -> dict:
    return {"size": size, "passed": bool(passed), "message": message}
