"""The judge's stages for a kernel exercise: correctness cases, timed calls, and the library's timed
calls in the trusted helper. Every input, reference, tolerance and timing stays in the judge; the
worker only receives inputs and returns where its output is."""

from __future__ import annotations

import itertools
import random
import secrets
import statistics
import time

import torch

from . import checking, crosstime, shared, timing
from .session import WorkerGone

WARMUP_CALLS = 3
# Ids of shared inputs, unique across every KernelStages of a judge (its workers keep them by id).
_INPUT_IDS = itertools.count(1)


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class KernelStages:
    def __init__(self, grading) -> None:
        self.g = grading
        self.problem = grading.problem
        self.device = grading.device
        self.out_dtype = getattr(torch, self.problem.out_dtype)
        self.reader = shared.OutputReader() if self.device == "cuda" else None
        self.arena = shared.Arena()
        self._null_id: int | None = None

    # -- correctness --------------------------------------------------------------------------------
    def correctness(self, timed: bool) -> None:
        """The test sizes; the benchmark sizes too unless they are timed (their first timed call is
        then their correctness case)."""
        g, p = self.g, self.problem
        sizes = p.sizes_for(self.device)
        if timed:
            sizes = [s for s in sizes if s not in p.bench_sizes]
        g.watch(g.learner, "correctness", "start")
        cpu_calls = []
        for size in sizes:
            started = time.monotonic()
            case, facts = self._case(size)
            case["seconds"] = round(time.monotonic() - started, 3)
            for key in ("split_seconds", "worker_seconds"):
                if key in facts:
                    case[key] = facts[key]
            g.result["cases"].append(case)
            cpu_calls.append(facts.get("cpu_kernels"))
            if g.stopped:
                return
        seen = g.watch(g.learner, "correctness", "stop")
        if self.reader is not None:
            self.reader.close()
        g.stage("correctness")
        passed = all(c["passed"] for c in g.result["cases"])
        g.result["status"] = "PASS" if passed else "FAIL"
        g.result["message"] = "all cases correct" if passed else "some cases are wrong"
        if passed and self.device == "cpu" and self.problem.language == "triton":
            from . import honesty

            g.result["honesty"] = honesty.judge_cpu(seen.get("operators", []), cpu_calls, g.own_kernels)

    def _case(self, size) -> tuple[dict, dict]:
        p, g = self.problem, self.g
        clock = [time.monotonic()]
        inputs = p.make_inputs(size, secrets.randbits(62), self.device)
        reference = p.reference(**inputs)
        tol = checking.derive_tolerance(reference, p.library(**inputs), self.out_dtype, p.tolerance_factor)
        shared_inputs = shared.Inputs(inputs, self.device, g.shared_folder, self.arena)
        _synchronize(self.device)
        clock.append(time.monotonic())
        label = _size_repr(size)
        try:
            answer, payload = self._ask_call(g.learner, shared_inputs, {"canary": True, "out_numel": reference.numel(), "out_dtype": p.out_dtype})
        except WorkerGone as gone:
            g.fail_hard(gone.status, str(gone))
            return checking.Case(size, False, str(gone)).to_dict(), {}
        finally:
            shared_inputs.release()
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
        if message is None:
            for name, value in inputs.items():
                if isinstance(value, torch.Tensor) and not torch.equal(shared_inputs.tensors[name], value):
                    message = f"your function changed its input {name!r}; inputs must be left as they are"
                    break
        if message is None and answer.get("past_end"):
            message = "your kernel wrote past the end of the output: mask the blocks at the edges (store only indices inside the output)"
        if message is not None:
            return checking.Case(size, False, message).to_dict(), answer
        return checking.judge_values(size, out, reference, tol).to_dict(), answer

    def _ask_call(self, session, shared_inputs, extra: dict) -> tuple[dict, bytes]:
        inputs_id = next(_INPUT_IDS)
        header, _ = session.ask({"op": "inputs", "id": inputs_id, "inputs": shared_inputs.describe()}, timeout=self.g.remaining())
        if not header.get("opened"):
            raise WorkerGone("ERROR", "the worker could not open the inputs")
        answer = session.ask({"op": "call", "id": inputs_id, **extra}, timeout=self.g.remaining())
        session.ask({"op": "drop", "id": inputs_id}, timeout=self.g.remaining())
        return answer

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

    # -- timed calls --------------------------------------------------------------------------------
    def timed(self, session, size, seed: int, check: bool, phase: str | None) -> dict:
        """Warm-up and timed calls of ``session``'s function at one size; returns the raw event
        times, how many timed outputs were wrong, the trusted helper's null calls made between the
        timed calls (the switch between processes, measured while they ran) and, when ``check``, the
        correctness case of the first call (against the float64 reference: the benchmark size is a
        correctness case too). Every call gets inputs drawn afresh by the problem's own generator,
        so a timed call cannot be told from a checked one and its tolerance holds for every draw."""
        p, g, timer = self.problem, self.g, self.g.timer
        draws = random.Random(seed)
        private = p.make_inputs(size, draws.getrandbits(62), "cuda")
        with torch.cuda.stream(timer.stream):
            shared_inputs = shared.Inputs(private, "cuda", arena=self.arena)
        torch.cuda.synchronize()
        inputs_id = next(_INPUT_IDS)
        session.ask({"op": "inputs", "id": inputs_id, "inputs": shared_inputs.describe()}, timeout=g.remaining())
        checked: dict = {}
        current = {"inputs": private}

        def draw() -> None:
            # Drawn before the timer's head start: a generator may wait for the GPU.
            fresh = p.make_inputs(size, draws.getrandbits(62), "cuda")
            current["inputs"] = {name: _same_kind(fresh.get(name), value) for name, value in private.items()}

        def refill() -> None:
            for name, value in current["inputs"].items():
                if isinstance(value, torch.Tensor):
                    shared_inputs.tensors[name].copy_(value)

        def one_call() -> tuple[crosstime.Raw, bool]:
            draw()
            raw, answer, copy = timer.call(
                send=lambda gate: session.send_only({"op": "call", "id": inputs_id, "gate": gate}),
                receive=lambda: session.receive(g.remaining(), "a timed call")[0],
                refill=refill,
                read=lambda answer: self.reader.view(answer["output"]) if "output" in answer else None,
                deadline_s=g.remaining(),
            )
            if "error" in answer:
                raise WorkerGone("ERROR", f"your function raised {answer['error']['type']} in a timed call: {answer['error']['message'][:300]}")
            if not check:
                return raw, True
            inputs = current["inputs"]
            with torch.cuda.stream(timer.stream):
                expected = p.library(**inputs)
                if not checked:
                    checked["case"] = self._first_case(size, answer, copy, inputs, expected)
                    checked["tolerance"] = self._loop_tolerance
                try:
                    ok = "output" in answer and self._screen_output(answer, expected) is None
                    ok = ok and checking.close_enough(copy, expected, checked["tolerance"])
                except (TypeError, RuntimeError):
                    ok = False
            torch.cuda.synchronize()
            return raw, ok

        raws, nulls, wrong = [], [], 0
        if phase:
            g.watch(session, f"warm-up {phase}", "start")
        for _ in range(WARMUP_CALLS):
            one_call()
            if checked and not checked["case"]["passed"]:
                break
        if phase:
            g.watch(session, f"warm-up {phase}", "stop")
        if not checked or checked["case"]["passed"]:
            if phase:
                g.watch(session, phase, "start")
            started = time.monotonic()
            while len(raws) < timing.MAX_CALLS:
                raw, ok = one_call()
                raws.append(raw)
                nulls.append(self.null_call())
                wrong += 0 if ok else 1
                enough = len(raws) >= timing.MIN_CALLS and sum(r.window_us for r in raws) * 1e-6 >= timing.TIMED_SECONDS
                if enough or (len(raws) >= timing.MIN_CALLS and time.monotonic() - started > 20.0):
                    break
            if phase:
                g.watch(session, phase, "stop")
        self.reader.close()
        session.ask({"op": "drop", "id": inputs_id}, timeout=g.remaining())
        return {"raws": raws, "nulls": nulls, "wrong": wrong, "case": checked.get("case")}

    def _first_case(self, size, answer: dict, copy, private: dict, expected: torch.Tensor) -> dict:
        """The first call at a benchmark size, judged like any correctness case; it also sets the
        tolerance of the timed calls that follow (against the library's answer, which is itself up
        to the library's error from the truth, so both errors are allowed)."""
        p = self.problem
        reference = p.reference(**private)
        tol = checking.derive_tolerance(reference, expected, self.out_dtype, p.tolerance_factor)
        self._loop_tolerance = checking.Tolerance(atol=2 * tol.atol + tol.library_max_error, rtol=2 * tol.rtol, library_max_error=0.0)
        message = self._screen_output(answer, reference)
        if message is not None or copy is None:
            return checking.Case(size, False, message or "no output came back").to_dict()
        return checking.judge_values(size, copy, reference, tol).to_dict()

    def null_calls(self, count: int = 20) -> list[crosstime.Raw]:
        """The helper's trivial calls: the cost of switching contexts, for subtraction."""
        self.g.select(self.g.helper, "null_entry")
        raws = [self.null_call() for _ in range(count + 2)]
        return raws[2:]

    def null_call(self) -> crosstime.Raw:
        """One call of the helper's trivial kernel through the same protocol as a timed call."""
        g, timer = self.g, self.g.timer
        if self._null_id is None:
            self._null_id = next(_INPUT_IDS)
            g.helper.ask({"op": "inputs", "id": self._null_id, "inputs": []}, timeout=g.remaining())
        raw, _, _ = timer.call(
            send=lambda gate: g.helper.send_only({"op": "call", "id": self._null_id, "gate": gate, "entry": "null_entry"}),
            receive=lambda: g.helper.receive(g.remaining(), "a calibration call")[0],
            refill=lambda: None,
            read=lambda answer: self.reader.view(answer["output"]),
            deadline_s=g.remaining(),
        )
        return raw


def _same_kind(fresh, first):
    """A freshly drawn input where it can stand in the first one's shared memory; scalars (which the
    worker received once) and anything of another shape or type stay as they were."""
    if isinstance(first, torch.Tensor) and isinstance(fresh, torch.Tensor) and fresh.shape == first.shape and fresh.dtype == first.dtype:
        return fresh
    return first


def _size_repr(size):
    return size if isinstance(size, (int, float, str)) else repr(size)


def summarise(charges_us: list[float]) -> dict:
    ms = [c * 1e-3 for c in charges_us]
    return timing.Timing.of(ms).__dict__ if ms else {"median_ms": float("nan"), "stderr_ms": float("nan"), "calls": 0}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
