"""The engine of Act 6's scheduler exercise (scheduler.py): it plays a trace of requests through a
scheduler's plans, refuses a plan it cannot carry out (an unknown or unarrived request, the KV cache
over its blocks, a deadlock) and, given the tiny transformer, generates every request's tokens, one
forward per step over a slotted KV cache (slots.py).

Time is counted in model-step times: a step costs one decode step, or proportionally more when it
prefills more than PREFILL_TOKENS_PER_STEP prompt tokens. On a GPU the engine also times itself
(``wall_seconds``): the plans a run recorded are replayed, without the scheduler, on the model there.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

PREFILL_TOKENS_PER_STEP = 256
BLOCK_SIZE = 16
KV_BLOCKS = 64
MAX_BATCH = 32
IDLE_STEPS_LIMIT = 50


@dataclass
class Request:
    rid: int
    arrival: float
    prompt: list
    max_new: int


def blocks_for(tokens: int) -> int:
    return math.ceil(tokens / BLOCK_SIZE)


class SchedulingError(Exception):
    """A plan the engine cannot carry out, said as a sentence."""


class Engine:
    """Plays a trace through a scheduler; with a model, generates every token of every request."""

    def __init__(self, requests: list, model=None) -> None:
        self.requests = {q.rid: q for q in requests}
        self.order = sorted(requests, key=lambda q: (q.arrival, q.rid))
        self.runner = None
        if model is not None:
            from .slots import SlotRunner

            # Each request holding a cache holds at least one block: KV_BLOCKS slots always suffice.
            self.runner = SlotRunner(model, KV_BLOCKS)

    def run(self, scheduler) -> dict:
        """{"time": makespan, "latency": {rid: step-times}, "outputs": {rid: tokens}, "steps": n, "plans":
        every plan carried out, "busy": steps that ran something, "idle": step-times nothing ran}; raises
        SchedulingError for an invalid plan or a deadlock (the learner's fault) and lets LearnerFault through."""
        scheduler.new(kv_blocks=KV_BLOCKS, block_size=BLOCK_SIZE, max_batch=MAX_BATCH)
        if self.runner is not None:
            self.runner.reset()
        pending = list(self.order)
        generated = {rid: [] for rid in self.requests}
        cached: set = set()
        done: dict = {}
        arrived: set = set()
        plans: list = []
        now, idle, steps, busy, quiet, finished = 0.0, 0.0, 0, 0, 0, []
        while len(done) < len(self.requests):
            while pending and pending[0].arrival <= now:
                q = pending.pop(0)
                arrived.add(q.rid)
                scheduler.call("add_request", request_id=q.rid, prompt_len=len(q.prompt), max_new_tokens=q.max_new)
            if not (arrived - set(done)) and not finished:
                idle += pending[0].arrival - now
                now = pending[0].arrival
                continue
            plan = scheduler.call("step", finished=finished)
            finished = []
            run, preempt = self._validate(plan, steps, arrived, done, cached)
            plans.append({"run": list(run), "preempt": list(preempt)})
            cached -= set(preempt)
            for rid in preempt:
                self._release(rid)
            held = sum(blocks_for(len(self.requests[r].prompt) + len(generated[r]) + (r in run)) for r in cached | set(run))
            if held > KV_BLOCKS:
                raise SchedulingError(
                    f"step {steps}: after it the requests holding a KV cache would need {held} blocks, more than the "
                    f"{KV_BLOCKS} there are (preempt a request, or admit fewer)"
                )
            steps += 1
            if not run:
                quiet += 1
                if quiet > IDLE_STEPS_LIMIT:
                    waiting = len(arrived) - len(done)
                    raise SchedulingError(f"deadlock: {IDLE_STEPS_LIMIT} steps in a row ran nothing while {waiting} requests waited")
                now, idle = now + 1.0, idle + 1.0
                continue
            busy, quiet = busy + 1, 0
            prefill = [r for r in run if r not in cached]
            prompt_tokens = sum(len(self.requests[r].prompt) + len(generated[r]) for r in prefill)
            self._execute(run, prefill, generated)
            cached |= set(run)
            now += max(1.0, prompt_tokens / PREFILL_TOKENS_PER_STEP)
            for r in run:
                if len(generated[r]) == self.requests[r].max_new:
                    done[r] = now
                    finished.append(r)
                    cached.discard(r)
                    self._release(r)
        return {"time": now, "latency": {r: done[r] - self.requests[r].arrival for r in done}, "outputs": generated,
                "steps": steps, "plans": plans, "busy": busy, "idle": idle}

    def _validate(self, plan, step: int, arrived: set, done: dict, cached: set) -> tuple[list, list]:
        if not isinstance(plan, dict) or not isinstance(plan.get("run"), list) or not isinstance(plan.get("preempt", []), list):
            raise SchedulingError(f"step {step}: step() returned {plan!r:.200}, not a dict with a list 'run' (and optionally a list 'preempt')")
        run, preempt = plan["run"], plan.get("preempt", [])
        for rid in run + preempt:
            if not isinstance(rid, int) or isinstance(rid, bool) or rid not in self.requests:
                raise SchedulingError(f"step {step}: {rid!r} is not the id of a request")
            if rid not in arrived:
                raise SchedulingError(f"step {step}: request {rid} has not arrived yet")
            if rid in done:
                raise SchedulingError(f"step {step}: request {rid} already finished")
        if len(set(run)) != len(run) or len(set(preempt)) != len(preempt):
            raise SchedulingError(f"step {step}: a request appears twice in the plan")
        if set(run) & set(preempt):
            raise SchedulingError(f"step {step}: requests {sorted(set(run) & set(preempt))} are both run and preempted")
        if any(rid not in cached for rid in preempt):
            raise SchedulingError(f"step {step}: request {next(r for r in preempt if r not in cached)} is preempted but holds no KV cache")
        if len(run) > MAX_BATCH:
            raise SchedulingError(f"step {step}: {len(run)} requests run, more than max_batch = {MAX_BATCH}")
        return run, preempt

    def _release(self, rid) -> None:
        if self.runner is not None:
            self.runner.release(rid)

    def _execute(self, run: list, prefill: list, generated: dict) -> None:
        """Prefill the new and the preempted (their prompt and tokens so far) and decode the others, in
        one forward (slots.py); without a model, a placeholder token each."""
        if self.runner is None:
            for r in run:
                generated[r].append(0)
            return
        decode = [r for r in run if r not in prefill]
        rows = [(r, generated[r][-1]) for r in decode]
        tokens = self.runner.step(rows, [(r, self.requests[r].prompt + generated[r]) for r in prefill])
        for r, token in zip(decode + prefill, tokens, strict=True):
            generated[r].append(token)


class Replay:
    """A scheduler that gives back recorded plans in order: what the timed replays run, so that no
    scheduler's own work (nor a round trip to the learner's process) is on the clock."""

    def __init__(self, plans: list) -> None:
        self.plans = plans

    def new(self, **constructor) -> None:
        self.next = iter(self.plans)

    def call(self, method: str, **kwargs):
        return next(self.next) if method == "step" else None


def wall_seconds(requests: list, runs: dict, model, rounds: int = 5) -> dict:
    """{name: (seconds, outputs)} for each recorded run ({name: Engine.run's result}): the best of
    ``rounds`` timed replays of its plans on ``model``, taken in turn after one untimed round of
    warm-up, the device synchronised before and after each and Python's garbage collector held
    off. A step-time in which the run waited for arrivals (``idle``) is charged as the mean of its
    busy steps: waiting is not free."""
    import gc

    import torch

    engine = Engine(requests, model)
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    best = dict.fromkeys(runs, float("inf"))
    outputs: dict = {}
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds + 1):
            for name, ran in runs.items():
                sync()
                started = time.perf_counter()
                replayed = engine.run(Replay(ran["plans"]))
                sync()
                seconds = time.perf_counter() - started
                outputs[name] = replayed["outputs"]
                if round_:
                    best[name] = min(best[name], seconds)
    finally:
        if collecting:
            gc.enable()
    return {name: (best[name] * (1.0 + ran["idle"] / max(1, ran["busy"])), outputs[name]) for name, ran in runs.items()}
