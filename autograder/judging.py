"""The judge's stages for a kernel exercise: correctness cases, timed calls, and the library's timed
calls in the trusted helper. Every input, reference, tolerance and timing stays in the judge; the
worker only receives inputs and returns where its output is."""

from __future__ import annotations

import secrets
import statistics
import time

import torch

from . import checking, shared, timing
from .result import CaseResult, Honesty
from .session import WorkerGone
from .windows import INPUT_IDS, TimedWindows, size_repr


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class KernelStages(TimedWindows):
    """The correctness cases of a kernel exercise; its timed windows come from TimedWindows."""

    def __init__(self, grading) -> None:
        self.g = grading
        self.problem = grading.problem
        self.device = grading.device
        self.out_dtype = getattr(torch, self.problem.out_dtype)
        self.reader = shared.OutputReader() if self.device == "cuda" else None
        self.arena = grading.arena

    # -- correctness --------------------------------------------------------------------------------
    def correctness(self, timed: bool) -> None:
        """The test sizes; the benchmark sizes too unless they are timed (their first timed call is
        then their correctness case)."""
        g, p = self.g, self.problem
        sizes = p.sizes_for(self.device)
        if timed:
            sizes = [s for s in sizes if s not in p.bench_sizes]
        g.watch(g.learner, "correctness", "start")
        cpu_calls, self.replays = [], []
        for size in sizes:
            started = time.monotonic()
            case, facts = self._case(size)
            case = CaseResult.from_dict(case)
            case.seconds = round(time.monotonic() - started, 3)
            case.split_seconds, case.worker_seconds = facts.get("split_seconds"), facts.get("worker_seconds")
            g.result.cases.append(case)
            cpu_calls.append(facts.get("cpu_kernels"))
            if g.stopped:
                return
        seen = g.watch(g.learner, "correctness", "stop")
        if self.reader is not None:
            self.reader.close()
        g.stage("correctness")
        passed = g.result.all_cases_passed
        g.result.status, g.result.message = ("PASS", "all cases correct") if passed else ("FAIL", "some cases are wrong")
        if passed and self.device == "cpu" and self.problem.language == "triton":
            from . import honesty

            g.result.honesty = Honesty.from_dict(honesty.judge_cpu(seen.get("operators", []), cpu_calls, g.own_kernels, self.replays))
            if g.result.honesty.ok:
                from . import launch_count

                counted = launch_count.judge_cpu(cpu_calls, p.max_launches, p.max_reads)
                if counted:
                    g.result.honesty = Honesty.from_dict(counted)

    def _case(self, size) -> tuple[dict, dict]:
        p, g = self.problem, self.g
        clock = [time.monotonic()]
        inputs = p.make_inputs(size, secrets.randbits(62), self.device)
        reference = p.reference(**inputs)
        tol = checking.problem_tolerance(p, inputs, reference, p.library(**inputs), self.out_dtype)
        shared_inputs = shared.Inputs(inputs, self.device, g.shared_folder, self.arena)
        again = self._other_values(size, inputs) if self.device == "cpu" and p.language == "triton" else None
        _synchronize(self.device)
        clock.append(time.monotonic())
        label = size_repr(size)
        try:
            answer, payload = self._ask_call(g.learner, shared_inputs, {"canary": True, "out_numel": reference.numel(), "out_dtype": p.out_dtype}, again)
        except WorkerGone as gone:
            g.fail_hard(gone.status, str(gone))
            return checking.Case(size, False, str(gone)).to_dict(), {}
        finally:
            shared_inputs.release()
        replayed = answer.pop("replayed", None)
        if "error" in answer:
            error = answer["error"]
            if error.get("refused"):
                g.fail_hard("REJECT", error["message"])
                return checking.Case(size, False, error["message"]).to_dict(), answer
            if error.get("out_of_bounds"):
                return checking.Case(size, False, error["message"]).to_dict(), answer
            g.fail_hard("COMPILE ERROR" if error.get("compile") else "ERROR", f"your function raised {error['type']} at size {label}: {error['message'][:300]}", error.get("traceback"))
            return checking.Case(size, False, f"{error['type']}: {error['message'][:500]}").to_dict(), answer
        clock.append(time.monotonic())
        message = self._screen_output(answer, reference)
        out = None if message else self._read(answer, payload)
        _synchronize(self.device)
        clock.append(time.monotonic())
        # Where a case's time goes: the judge's inputs and reference, the worker's call (with its
        # canaries), the judge's read of the output; the comparison is the rest.
        answer["split_seconds"] = {name: round(b - a, 4) for name, a, b in zip(("reference", "call", "read"), clock, clock[1:], strict=False)}
        message = message or _tampered(inputs, shared_inputs.tensors, answer)
        if message is not None:
            return checking.Case(size, False, message).to_dict(), answer
        case = checking.judge_values(size, out, reference, tol)
        if case.passed and again is not None:
            self.replays.append(_replayed(size, replayed))
        return case.to_dict(), answer

    def _other_values(self, size, inputs: dict) -> tuple[dict, torch.Tensor, checking.Tolerance]:
        """The inputs of a CPU call's replay (autograder.replay): its floating-point tensors (and the
        problem's ``replay_values``) drawn from another seed, everything else as it is, with their
        reference and tolerance."""
        p = self.problem
        fresh = p.make_inputs(size, secrets.randbits(62), self.device)

        def new(name, value):
            other = fresh.get(name)
            same_layout = isinstance(other, torch.Tensor) and (other.dtype, other.shape, other.stride()) == (value.dtype, value.shape, value.stride())
            drawn = isinstance(value, torch.Tensor) and (value.is_floating_point() or name in p.replay_values)
            return other if drawn and same_layout else value

        values = {name: new(name, value) for name, value in inputs.items()}
        reference = p.reference(**values)
        return values, reference, checking.problem_tolerance(p, values, reference, p.library(**values), self.out_dtype)

    def _ask_call(self, session, shared_inputs, extra: dict, again: tuple | None = None) -> tuple[dict, bytes]:
        """One call on ``shared_inputs``; with ``again`` (``_other_values``), its launches replayed
        on those values next, the replay's answer and output put in the answer as ``replayed``."""
        inputs_id = next(INPUT_IDS)
        header, _ = session.ask({"op": "inputs", "id": inputs_id, "inputs": shared_inputs.describe()}, timeout=self.g.remaining())
        if not header.get("opened"):
            raise WorkerGone("ERROR", "the worker could not open the inputs")
        answer = session.ask({"op": "call", "id": inputs_id, **extra}, timeout=self.g.remaining())
        if again is not None and "output" in answer[0]:
            replayed = self._ask_replay(session, inputs_id, again[0])
            if _wrong_values(replayed, again[1], again[2]):
                # The second reading (autograder.replay): what the host zeroed may have been zero already.
                replayed = self._ask_replay(session, inputs_id, again[0], whole=True)
            answer[0]["replayed"] = (*replayed, again[1], again[2])
        session.ask({"op": "drop", "id": inputs_id}, timeout=self.g.remaining())
        return answer

    def _ask_replay(self, session, inputs_id: int, values: dict, whole: bool = False) -> tuple[dict, bytes]:
        shared_values = shared.Inputs(values, self.device, self.g.shared_folder, self.arena)
        values_id = next(INPUT_IDS)
        try:
            session.ask({"op": "inputs", "id": values_id, "inputs": shared_values.describe()}, timeout=self.g.remaining())
            return session.ask({"op": "replay", "id": inputs_id, "with": values_id, "whole": whole}, timeout=self.g.remaining())
        finally:
            shared_values.release()
            session.ask({"op": "drop", "id": values_id}, timeout=self.g.remaining())

    def _screen_output(self, answer: dict, reference: torch.Tensor) -> str | None:
        if "wrong_type" in answer:
            return f"wrong output type: {answer['wrong_type']}"
        if "aliases" in answer:
            return f"output shares memory with the input {answer['aliases']!r}; return a new tensor"
        meta = answer.get("output")
        if not isinstance(meta, dict):
            return "no output came back"
        p = self.problem
        return checking.screen(meta.get("device"), meta.get("dtype"), tuple(meta.get("shape", ())), bool(meta.get("contiguous")), self.device, p.out_dtype, tuple(reference.shape))

    def _read(self, answer: dict, payload: bytes) -> torch.Tensor:
        meta = answer["output"]
        if self.device == "cuda":
            return self.reader.view(meta).clone()
        return shared.output_from_bytes(meta, payload)


def _tampered(inputs: dict, shared_tensors: dict, answer: dict) -> str | None:
    """The tamper stage of a case: an input the call changed (the judge's private copy against the
    shared one it handed over), or a write past the end of the output (the worker's canary)."""
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and not torch.equal(shared_tensors[name], value):
            return f"your function changed its input {name!r}; inputs must be left as they are"
    if answer.get("past_end"):
        return "your kernel wrote past the end of the output: mask the blocks at the edges (store only indices inside the output)"
    return None


def _wrong_values(replayed: tuple[dict, bytes], reference: torch.Tensor, tol: checking.Tolerance) -> bool:
    """Whether a replay's output came back and holds other values than the answer to the new inputs."""
    answer, payload = replayed
    return isinstance(answer.get("output"), dict) and not checking.compare(shared.output_from_bytes(answer["output"], payload), reference, tol)[0]


def _replayed(size, replayed: tuple | None) -> str | None:
    """The judge's reading of a replay: None when the output holds the answer to the new values,
    else what went wrong, in words for honesty.judge_cpu."""
    if replayed is None:
        return "the worker did not replay the call"
    (answer, payload), reference, tol = replayed[:2], replayed[2], replayed[3]
    if answer.get("unfollowed"):
        return f"your kernel {answer['unfollowed']} was given an argument that is not a tensor of known size, so what reached it cannot be followed"
    if "error" in answer:
        return f"your kernels raised {answer['error'].get('type')} when run again on other values of the inputs: {answer['error'].get('message', '')[:200]}"
    if answer.get("changed"):
        return f"while they ran again, when nothing of your code was meant to run, {answer['changed']}"
    if not isinstance(answer.get("output"), dict):
        return "the worker did not replay the call"
    case = checking.judge_values(size, shared.output_from_bytes(answer["output"], payload), reference, tol)
    return None if case.passed else f"at size {size_repr(size)}: {case.message}"


def summarise(charges_us: list[float]) -> dict:
    ms = [c * 1e-3 for c in charges_us]
    return timing.Timing.of(ms).__dict__ if ms else {"median_ms": float("nan"), "stderr_ms": float("nan"), "calls": 0}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
