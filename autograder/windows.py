"""The timed windows of a kernel exercise: the learner's calls (then the library's, in the trusted
helper) queued several at a time behind the judge's go flag, each on inputs drawn afresh and each
output read and checked, with the helper's null calls between windows for the switch between
processes (autograder.crosstime times one window)."""

from __future__ import annotations

import itertools
import math
import random
import secrets
import time

import torch

from . import checking, crosstime, timing
from .session import WorkerGone
from .shared import shared_sets_of

# Ids of shared inputs, unique across every KernelStages of a judge (its workers keep them by id).
INPUT_IDS = itertools.count(1)

WARMUP_WINDOWS = 3
# Fitting the calls per window to the library: the first window loads and compiles, the second says
# whether a window's calls can all be launched before it starts.
FIT_WARMUP_WINDOWS = 2
# A timed window holds several calls when one call is short, so the switch between processes
# (about 300 us on an H100, drifting by tens of microseconds within a grading) stays a small share
# of what is measured: windows last at least this long at the physical floor ...
BATCH_WINDOW_US = 4000.0
# ... with at most this many calls, whose inputs and outputs take at most this share of the GPU's
# memory and of what is free when the grading starts (other gradings may share the GPU). At 32, an
# int4 GEMV of 4096 x 4096 (about 8 us a call) filled 260 us against a switch drifting by tens of
# microseconds: three gradings on an H100 read 2.01x to 2.43x cuBLAS at that size.
MAX_BATCH = 128
BATCH_MEMORY_SHARE, BATCH_FREE_SHARE = 0.2, 0.5
# A call so slow that a size's windows pass SLOW_SECONDS is far from any speed points: two windows
# tell its time (an H200 took 216 s on NumPy on the host, 0.27 s and 1.1 s a call, timing three twice).
SLOW_SECONDS = 20.0
SLOW_WARMUP_SECONDS = 10.0
MIN_SLOW_WINDOWS = 2


class TimedWindows:
    """Mixed into autograder.judging.KernelStages, whose ``g`` (the grading), ``problem``, ``reader``,
    ``arena`` and ``_screen_output`` it uses."""

    _null_id: int | None = None

    def plan_windows(self) -> dict:
        """Calls per timed window at each benchmark size, the same for the learner and the library:
        enough that a window lasts BATCH_WINDOW_US at this GPU's physical floor, within a share of
        its memory, and no more than the library's calls that can all be launched before a window
        starts (``fit_windows``). Decided before the learner's code is loaded, from the problem, the
        library and the GPU alone, so nothing the learner does changes it."""
        p = self.problem
        total = torch.cuda.get_device_properties(0).total_memory
        free, _ = torch.cuda.mem_get_info()
        memory = min(BATCH_MEMORY_SHARE * total, BATCH_FREE_SHARE * free)
        planned = {}
        for size in p.bench_sizes:
            floor_us = timing.floor_ms(p, size, self.g.result.ceilings) * 1e3
            inputs = p.make_inputs(size, secrets.randbits(62), "cuda")
            out = p.library(**inputs)
            tensor_bytes = sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))
            # The judge's staged and shared inputs, the worker's output and the judge's copy of it.
            per_call = 2 * tensor_bytes + 2 * out.numel() * out.element_size()
            planned[size_repr(size)] = batch_size(floor_us, per_call, int(memory))
            del inputs, out
        torch.cuda.empty_cache()
        return self.fit_windows(planned)

    def fit_windows(self, planned: dict) -> dict:
        """``planned`` halved (down to one call) at each size where the library's calls of a window
        cannot all be launched before it starts, found with the library's own warm-up windows in
        the trusted helper. An eager library of dozens of kernels a call fills the launch queue
        behind the go word, and the rest of its launching is timed (four H100s measured an eager
        decode layer at 1.6-5.4 ms a call that way, 0.14 ms queued). The learner gets the same
        windows, so both sides are timed alike; a library that cannot be tried here keeps the plan
        (its own timing reports why)."""
        g = self.g
        g.windows = dict(planned)
        fitted = dict(planned)
        try:
            g.select(g.helper, "library_entry")
            for size in self.problem.bench_sizes:
                if planned[size_repr(size)] > 1:
                    fitted[size_repr(size)] = self.timed(g.helper, size, secrets.randbits(62), check=False, phase=None, adapt=True, fit_only=True)["calls_per_window"]
        except Exception:  # noqa: BLE001 -- the library's own timing, later, says what failed
            return planned
        return fitted

    def timed(self, session, size, seed: int, check: bool, phase: str | None, adapt: bool = False, fit_only: bool = False) -> dict:
        """Warm-up and timed windows of ``session``'s function at one size; returns the raw event
        times per window, the calls per window, how many timed outputs were wrong, the trusted
        helper's null calls made between the windows (the switch between processes, measured while
        they ran), whether they stopped early for a slow call and, when ``check``, the correctness case
        of the first call (against the float64 reference: the benchmark size is a correctness case
        too). Every call gets inputs drawn afresh by the problem's own generator and every output is
        read, so a timed call cannot be told from a checked one and its tolerance holds for every
        draw. ``adapt`` (the trusted helper's calls only): fewer calls a window while the warm-up's
        cannot all be launched before their window starts; ``fit_only``: stop after the warm-up."""
        p, g, timer = self.problem, self.g, self.g.timer
        draws = random.Random(seed)
        private = p.make_inputs(size, draws.getrandbits(62), "cuda")
        count = self.g.windows.get(size_repr(size), 1)
        with torch.cuda.stream(timer.stream):
            shared_sets, descriptors, block = shared_sets_of(private, count, "cuda", arena=self.arena)
            # Fresh inputs are written here before a window and reach the shared block in one copy
            # inside it: one launch, so the judge's stream is always held until its work before T0
            # is queued, and that work runs at the GPU's pace whatever the number of inputs (copies
            # launched one per tensor from Python stretched it with the judge's host, which read as
            # the worker's GPU work when other gradings loaded the CPU).
            stage, staged = block.staging()
        torch.cuda.synchronize()
        staged_sets = [{name: staged[f"{index}/{name}"] for name in tensors} for index, tensors in enumerate(shared_sets)]
        ids = [next(INPUT_IDS) for _ in range(count)]
        for inputs_id, described in zip(ids, descriptors, strict=True):
            session.ask({"op": "inputs", "id": inputs_id, "inputs": described}, timeout=g.remaining())
        checked: dict = {}
        current: dict = {}
        # The calls of each window; fewer only where ``adapt``. The learner's windows keep their size
        # whatever its code does: how the learner is timed is never the learner's to change. The
        # judge's own work around a window (refilling every set of inputs, reading ``count``
        # outputs) stays the same whatever the window holds, as the learner's segments are judged
        # against the library's.
        active = [count]
        adapts = adapt and session is g.helper

        def draw() -> None:
            # Drawn before the timer's head start: a generator may wait for the GPU. Each set is
            # staged at once, so only one set of fresh tensors is alive at a time; the staged views
            # are the inputs the outputs are checked against (untouched until the next draw).
            current["inputs"] = []
            for index in range(count):
                fresh = p.make_inputs(size, draws.getrandbits(62), "cuda")
                inputs = {name: _same_kind(fresh.get(name), value) for name, value in private.items()}
                for name, view in staged_sets[index].items():
                    view.copy_(inputs[name])
                current["inputs"].append({name: staged_sets[index].get(name, value) for name, value in inputs.items()})

        def refill() -> None:
            block.refill_from(stage)

        def read(answer: dict) -> list[torch.Tensor] | None:
            outputs = answer.get("outputs")
            if not isinstance(outputs, list) or len(outputs) != active[0]:
                return None
            return [self.reader.view(meta) for meta in outputs]

        launches: list[float] = []

        def one_window(held: bool = True) -> tuple[crosstime.Raw, int]:
            draw()
            raw, answer, copies = timer.call(
                send=lambda gate: session.send_only({"op": "call", "ids": ids[: active[0]], "gate": gate}),
                ready=session.readable,
                cpu_s=session.cpu_seconds,
                receive=lambda: session.receive(g.remaining(), "a timed call")[0],
                refill=refill,
                read=read,
                deadline_s=g.remaining(),
                held=held,
                reads=count,
            )
            raw.calls = active[0]
            if "error" in answer:
                raise WorkerGone("ERROR", f"your function raised {answer['error']['type']} in a timed call: {answer['error']['message'][:300]}")
            if isinstance(answer.get("launch_us"), (int, float)):
                launches.append(float(answer["launch_us"]))
            if not check:
                return raw, 0
            wrong = 0
            metas = answer.get("outputs") if len(copies) == active[0] else None
            for index, inputs in enumerate(current["inputs"][: active[0]]):
                wrong += 0 if self._timed_output_ok(size, answer, metas, copies, index, inputs, checked) else 1
            torch.cuda.synchronize()
            return raw, wrong

        raws, nulls, wrong, slow = [], [], 0, False
        if phase:
            g.watch(session, f"warm-up {phase}", "start")
        warming = time.monotonic()
        for _ in range(FIT_WARMUP_WINDOWS if fit_only else WARMUP_WINDOWS):
            warm, _ = one_window(held=False)
            if checked and not checked["case"]["passed"]:
                break
            # Compiling and autotuning end inside the first window: once the warm-up has lasted
            # SLOW_WARMUP_SECONDS the code is warm, and a call that slow is far from any points.
            if time.monotonic() - warming > SLOW_WARMUP_SECONDS:
                break
        while adapts and not warm.queued and active[0] > 1:
            active[0] //= 2
            warm, _ = one_window(held=False)
        if phase:
            g.watch(session, f"warm-up {phase}", "stop")
        if not fit_only and (not checked or checked["case"]["passed"]):
            if phase:
                g.watch(session, phase, "start")
            started = time.monotonic()
            while len(raws) < timing.MAX_CALLS:
                raw, window_wrong = one_window()
                raws.append(raw)
                nulls.append(self.null_call())
                wrong += window_wrong
                # MIN_CALLS windows at least, then enough calls or enough GPU time; fewer for a slow call.
                enough = len(raws) >= timing.MIN_CALLS and (len(raws) * active[0] >= timing.MAX_CALLS or sum(r.window_us for r in raws) * 1e-6 >= timing.TIMED_SECONDS)
                slow = not enough and len(raws) >= MIN_SLOW_WINDOWS and time.monotonic() - started > SLOW_SECONDS
                if enough or slow:
                    break
            if phase:
                g.watch(session, phase, "stop")
        self.reader.close()
        for inputs_id in ids:
            session.ask({"op": "drop", "id": inputs_id}, timeout=g.remaining())
        return {"raws": raws, "calls_per_window": active[0], "nulls": nulls, "wrong": wrong, "case": checked.get("case"), "launch_us": launches, "slow": slow}

    def _timed_output_ok(self, size, answer: dict, metas: list | None, copies: list, index: int, inputs: dict, checked: dict) -> bool:
        """One output of a timed window against the library's answer for its inputs; the first
        output at a size is also its correctness case."""
        p, timer = self.problem, self.g.timer
        with torch.cuda.stream(timer.stream):
            expected = p.library(**inputs)
            copy = copies[index] if metas is not None else None
            one = {key: answer[key] for key in ("aliases", "wrong_type") if key in answer}
            if metas is not None:
                one["output"] = metas[index]
            if not checked:
                checked["case"] = self._first_case(size, one, copy, inputs, expected)
                checked["tolerance"] = self._loop_tolerance
            try:
                return copy is not None and self._screen_output(one, expected) is None and checking.close_enough(copy, expected, checked["tolerance"])
            except (TypeError, RuntimeError):
                return False

    def _first_case(self, size, answer: dict, copy, private: dict, expected: torch.Tensor) -> dict:
        """The first call at a benchmark size, judged like any correctness case; it also sets the
        tolerance of the timed calls that follow (against the library's answer, which is itself up
        to the library's error from the truth, so both errors are allowed)."""
        p = self.problem
        reference = p.reference(**private)
        tol = checking.problem_tolerance(p, private, reference, expected, self.out_dtype)
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
            self._null_id = next(INPUT_IDS)
            g.helper.ask({"op": "inputs", "id": self._null_id, "inputs": []}, timeout=g.remaining())
        raw, _, _ = timer.call(
            send=lambda gate: g.helper.send_only({"op": "call", "ids": [self._null_id], "gate": gate, "entry": "null_entry"}),
            ready=g.helper.readable,
            cpu_s=g.helper.cpu_seconds,
            receive=lambda: g.helper.receive(g.remaining(), "a calibration call")[0],
            refill=lambda: None,
            read=lambda answer: [self.reader.view(meta) for meta in answer["outputs"]],
            deadline_s=g.remaining(),
        )
        return raw


def batch_size(floor_us: float, call_bytes: int, memory_bytes: int) -> int:
    """Calls per timed window: enough to fill BATCH_WINDOW_US at the floor, at most MAX_BATCH, and
    no more than fit in ``memory_bytes`` (at least one)."""
    wanted = MAX_BATCH if floor_us <= 0 else math.ceil(BATCH_WINDOW_US / floor_us)
    fits = memory_bytes // max(call_bytes, 1)
    return max(1, min(MAX_BATCH, wanted, fits))


def _same_kind(fresh, first):
    """A freshly drawn input where it can stand in the first one's shared memory; scalars (which the
    worker received once) and anything of another shape or type stay as they were."""
    if isinstance(first, torch.Tensor) and isinstance(fresh, torch.Tensor) and fresh.shape == first.shape and fresh.dtype == first.dtype:
        return fresh
    return first


def size_repr(size):
    return size if isinstance(size, (int, float, str)) else repr(size)
