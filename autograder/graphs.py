"""Exercises graded on a wrapper the learner builds around the grader's step: a CUDA graph captured
from a launch-bound loop, replayed on fresh inputs.

The learner's function gets the grader's step (a decode-like loop at batch 1, built in the worker
from a seed the judge sends) and an example input, and returns ``replay(x)``, which must compute
``step(x)``. The harness in the worker calls it on fresh inputs; the judge checks every output
against its own float64 reference. Speed is timed by the judge's own clock around a window of
calls it asks for (the wall time of N replays and the synchronisation after them, each on its own
input, every output checked), against the same N eager steps timed in the judge itself, beside each
replay window while the learner's process is idle and again once it is gone, the judge and the worker
on one CPU core (two launch-bound loops are paced by the core they run on). The fastest eager window
is compared: a submission cannot touch either clock, and slowing the baseline down gains nothing.
"""

from __future__ import annotations

import pickle
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from . import pinning
from .result import CaseResult, MetricValue

# Timed windows of each side; the best of them is compared. The replays' windows also include the
# request's round trip and the outputs' copy back (a fraction of a millisecond against tens).
WINDOWS = 3
MOVED = ("your code moved its threads off the CPU core the grader timed on, or changed their priority (os.sched_setaffinity, "
         "os.setpriority or the like): the replays and the eager steps are compared on one core at one priority, and the "
         "replays must stay as the grader put them")
CAPTURE_HINTS = (
    ("capturing", "something in the captured region synchronised with the CPU (.item(), .cpu(), print of a tensor, "
     "torch.cuda.synchronize) or used a stream that was not capturing: warm up before the capture and keep the CPU out of it"),
    ("not permitted", "an operation that is illegal during capture ran inside it (a synchronisation, a new allocation "
     "outside the graph's pool, a host-to-device copy from pageable memory)"),
)


@dataclass
class GraphProblem:
    """make_step(seed, device) -> (step, width): the grader's step, on a (1, width) float32 input.
    The learner's ``function`` is make_graphed(step, example) -> replay. Speed: eager time over
    replay time, 0 points at ``zero_at``, full at ``full_at``; ``solution_target`` for the GPU run."""

    name: str
    title: str
    notebook: str
    function: str
    make_step: Callable
    zero_at: float = 1.0
    full_at: float = 2.0
    solution_target: float = 3.0
    checked_inputs: int = 8
    timed_calls: int = 200
    arguments: tuple[str, ...] = ("step", "example")
    correctness_points: float = 2.0
    speed_points: float = 2.0
    language: str = "python"
    notes: dict = field(default_factory=dict)
    needs_gpu_reason: str = "captures and replays a CUDA graph, which needs an NVIDIA GPU"
    kind: ClassVar[str] = "graphed"

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.speed_points

    @property
    def needs_gpu(self) -> bool:
        return True

    def speed_fraction(self, ratio: float) -> float:
        return min(1.0, max(0.0, (ratio - self.zero_at) / (self.full_at - self.zero_at)))


# --- In the worker ------------------------------------------------------------------------------------


class Harness:
    """The learner's wrapper around the grader's step, called on inputs the judge sends."""

    def __init__(self, problem) -> None:
        self.problem = problem
        self.replay = None
        self.step = None
        self.inputs: list = []

    def __call__(self, module, entry: str, request: dict, payload: bytes, device: str, error) -> tuple[dict, bytes]:
        import torch

        if request["action"] == "capture":
            step, width = self.problem.make_step(request["seed"], device)
            # The graph reads the step's weights where they were at capture: they must outlive it,
            # as a model outlives the graphs captured from it.
            self.step = step
            example = torch.randn(1, width, device=device)
            try:
                self.replay = getattr(module, entry)(step, example)
            except Exception as exc:  # noqa: BLE001 -- a failed capture is the learner's verdict
                return {"capture_error": error(exc)}, b""
            return ({"captured": True} if callable(self.replay) else {"wrong_type": f"{entry} must return a function replay(x); it returned a {type(self.replay).__name__}"}), b""
        if request["action"] == "inputs":
            self.inputs = [torch.from_numpy(a).to(device) for a in pickle.loads(payload)]
            _synchronize(device)
            return {"ready": len(self.inputs)}, b""
        outputs = []
        try:
            for x in self.inputs:
                # Cloned at once: a replay overwrites its static output, and each call is checked.
                outputs.append(self.replay(x).clone())
            _synchronize(device)
        except Exception as exc:  # noqa: BLE001
            return {"error": error(exc)}, b""
        if any(not isinstance(o, torch.Tensor) or o.shape != self.inputs[0].shape for o in outputs):
            return {"wrong_type": f"replay(x) must return a tensor of shape {tuple(self.inputs[0].shape)}"}, b""
        return {"outputs": len(outputs)}, torch.cat(outputs).to("cpu", torch.float32).numpy().tobytes()


# --- In the judge ---------------------------------------------------------------------------------------


def _synchronize(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def grade(g) -> None:
    problem, seed = g.problem, secrets.randbits(62)
    header = _ask(g, {"action": "capture", "seed": seed})
    if header.get("capture_error"):
        g.fail_hard("FAIL", explain_capture(header["capture_error"]))
        return
    if not header.get("captured"):
        g.fail_hard("FAIL", header.get("wrong_type", "the wrapper could not be built"))
        return
    step, width = problem.make_step(seed, g.device)
    rng = np.random.default_rng(secrets.randbits(62))
    checked = [rng.standard_normal((1, width)).astype(np.float32) for _ in range(problem.checked_inputs)]
    g.result.cases.append(CaseResult.from_dict(_check(g, step, checked, "fresh inputs")))
    g.stage("captured and checked")
    if not g.result.cases[-1].passed:
        g.learner.end()
        g.pass_if_all("", "replay(x) does not compute step(x)")
        return
    def draw() -> list:
        return [rng.standard_normal((1, width)).astype(np.float32) for _ in range(problem.timed_calls)]

    eager = _Eager(step, draw(), g.device)
    replay_windows, eager_windows = [], []
    with pinning.on_one_cpu(g.learner.process.pid) as cpu:
        for window in range(WINDOWS):
            # An eager window beside each replay window, the worker idle, so that both follow the
            # host's load as it changes; the learner's process can only slow these down, and the
            # fastest eager window is the one compared.
            eager_windows.append(eager.window())
            # Every window's inputs are new and reach the worker just before it: a replay that kept
            # the outputs of inputs it saw before has nothing to return them for.
            timed = draw()
            _ask(g, {"action": "inputs"}, pickle.dumps(timed))
            started = time.perf_counter()
            header, data = g.learner.ask({"op": "harness", "action": "run"}, timeout=g.remaining())
            replay_windows.append(time.perf_counter() - started)
            case = _compare(step, timed, header, data, g.device, f"timed window {window + 1}: {len(timed)} calls, each on its own input")
            if not case["passed"]:
                break
        moved = pinning.threads_off(g.learner.process.pid, cpu)
        g.learner.end()
        g.result.cases.append(CaseResult.from_dict(case))
        if moved:
            g.result.cases.append(CaseResult.from_dict({"size": "timed windows", "passed": False, "message": MOVED}))
        g.pass_if_all("replay(x) computes step(x) on every input", "replay(x) does not compute step(x)")
        if g.result.status != "PASS":
            return
        beside = len(eager_windows)
        eager_windows += [eager.window() for _ in range(WINDOWS)]
        # Moved or deprioritised by the worker while it ran, the judge's loop would have timed the
        # eager step slow: on_one_cpu's exit puts its CPUs back, so it is looked at here.
        if pinning.caller_moved(cpu):
            g.fail_hard("REJECT", "your code moved the grader's process off the CPU core it times on, or lowered its priority "
                        "(os.sched_setaffinity, os.setpriority or the like), which would slow down the eager steps it times")
            return
    replay_s, eager_s = min(replay_windows), min(eager_windows)
    ratio = eager_s / replay_s
    # Every window's time per step is kept: both loops are paced by the host's CPU, and a ratio that
    # moved between gradings is told apart from its windows.
    g.result.extra["graph"] = {
        "eager_us": 1e6 * eager_s / len(timed), "replay_us": 1e6 * replay_s / len(timed), "ratio": ratio,
        "eager_windows_us": [1e6 * t / len(timed) for t in eager_windows], "replay_windows_us": [1e6 * t / len(timed) for t in replay_windows],
        "eager_beside_worker": beside, "cpu": cpu,
    }
    g.result.extra["speed_fraction"] = problem.speed_fraction(ratio)
    g.result.speed_metric = MetricValue("ratio to eager", ratio)
    g.result.extra["speed_note_text"] = (
        f"{1e6 * replay_s / len(timed):.1f} us per step replayed against {1e6 * eager_s / len(timed):.1f} us eager: "
        f"{ratio:.2f}x (full marks at {problem.full_at:g}x; the reference solution reaches {problem.solution_target:g}x)"
    )


def _ask(g, request: dict, payload: bytes = b"") -> dict:
    header, _ = g.learner.ask({"op": "harness", **request}, payload, timeout=g.remaining())
    return header


def _check(g, step, inputs: list, label: str) -> dict:
    _ask(g, {"action": "inputs"}, pickle.dumps(inputs))
    header, data = g.learner.ask({"op": "harness", "action": "run"}, timeout=g.remaining())
    return _compare(step, inputs, header, data, g.device, label)


def _compare(step, inputs: list, header: dict, data: bytes, device: str, label: str) -> dict:

    if "error" in header or "wrong_type" in header:
        message = header.get("wrong_type") or f"replay raised {header['error']['type']}: {header['error']['message'][:600]}"
        return {"size": label, "passed": False, "message": message}
    width = inputs[0].shape[1]
    if len(data) != 4 * width * len(inputs):
        return {"size": label, "passed": False, "message": "the outputs did not come back whole"}
    got = np.frombuffer(data, dtype=np.float32).reshape(len(inputs), width)
    references = _references(step, inputs, device)
    worst = 0.0
    for i, (exact, tolerance) in enumerate(references):
        error = float(np.abs(got[i] - exact).max())
        if not np.isfinite(error) or error > tolerance:
            return {"size": label, "passed": False, "message": f"call {i}: off by {error:.3g} (tolerance {tolerance:.3g}); a replay must read the new input, not the one captured"}
        worst = max(worst, error / tolerance)
    return {"size": label, "passed": True, "message": f"{len(inputs)} outputs match the float64 reference (worst error {worst:.0%} of its tolerance)"}


def _references(step, inputs: list, device: str) -> list:
    """(float64 answer, tolerance) for each input, computed once per list of inputs (the list is
    kept with them, so that a new list is never taken for one whose id it reuses)."""
    import torch

    if _REFERENCES.get("inputs") is not inputs:
        batch = torch.from_numpy(np.concatenate(inputs)).to(device)
        with torch.no_grad():
            eager = torch.cat([step(row[None]) for row in batch]).cpu().numpy()
            exact = step(batch.double(), dtype=torch.float64).cpu().numpy()
        tolerances = 8 * np.abs(eager - exact).max(axis=1) + 1e-5
        _REFERENCES.update(inputs=inputs, value=list(zip(exact, tolerances, strict=True)))
    return _REFERENCES["value"]


_REFERENCES: dict = {}


class _Eager:
    """The same calls, eager, in the judge: inputs on the GPU first, then in each window every step
    and the clone of its output, then one synchronisation."""

    def __init__(self, step, inputs: list, device: str) -> None:
        import torch

        self.step, self.device = step, device
        self.inputs = [torch.from_numpy(x).to(device) for x in inputs]
        for x in self.inputs[:10]:
            step(x).clone()

    def window(self) -> float:
        _synchronize(self.device)
        started = time.perf_counter()
        for x in self.inputs:
            self.step(x).clone()
        _synchronize(self.device)
        return time.perf_counter() - started


def explain_capture(error: dict) -> str:
    message = error.get("message", "")
    hint = next((text for key, text in CAPTURE_HINTS if key in message.lower()), "")
    return f"the capture failed: {error.get('type')}: {message[:800]}" + (f"\nWhat it usually means: {hint}" if hint else "")
