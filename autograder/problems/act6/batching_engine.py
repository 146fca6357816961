"""The engine of Act 6's scheduler exercise (scheduler.py): it plays a trace of requests through a
scheduler's plans, refuses a plan it cannot carry out (an unknown or unarrived request, the KV cache
over its blocks, a deadlock) and, given the tiny transformer, generates every request's tokens.

Time is counted in model-step times: a step costs one decode step, or proportionally more when it
prefills more than PREFILL_TOKENS_PER_STEP prompt tokens."""

from __future__ import annotations

import math
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
        self.model = model

    def run(self, scheduler) -> dict:
        """{"time": makespan, "latency": {rid: seconds}, "outputs": {rid: tokens}, "steps": n}; raises
        SchedulingError for an invalid plan or a deadlock (the learner's fault) and lets LearnerFault through."""
        scheduler.new(kv_blocks=KV_BLOCKS, block_size=BLOCK_SIZE, max_batch=MAX_BATCH)
        pending = list(self.order)
        generated = {rid: [] for rid in self.requests}
        caches: dict = {}
        cached: set = set()
        done: dict = {}
        arrived: set = set()
        now, steps, idle, finished = 0.0, 0, 0, []
        while len(done) < len(self.requests):
            while pending and pending[0].arrival <= now:
                q = pending.pop(0)
                arrived.add(q.rid)
                scheduler.call("add_request", request_id=q.rid, prompt_len=len(q.prompt), max_new_tokens=q.max_new)
            if not (arrived - set(done)) and not finished:
                now = pending[0].arrival
                continue
            plan = scheduler.call("step", finished=finished)
            finished = []
            run, preempt = self._validate(plan, steps, arrived, done, cached)
            cached -= set(preempt)
            for rid in preempt:
                caches.pop(rid, None)
            held = sum(blocks_for(len(self.requests[r].prompt) + len(generated[r]) + (r in run)) for r in cached | set(run))
            if held > KV_BLOCKS:
                raise SchedulingError(
                    f"step {steps}: after it the requests holding a KV cache would need {held} blocks, more than the "
                    f"{KV_BLOCKS} there are (preempt a request, or admit fewer)"
                )
            if not run:
                idle += 1
                if idle > IDLE_STEPS_LIMIT:
                    waiting = len(arrived) - len(done)
                    raise SchedulingError(f"deadlock: {IDLE_STEPS_LIMIT} steps in a row ran nothing while {waiting} requests waited")
                now += 1.0
                steps += 1
                continue
            idle = 0
            prefill = [r for r in run if r not in cached]
            prompt_tokens = sum(len(self.requests[r].prompt) + len(generated[r]) for r in prefill)
            if self.model is not None:
                self._execute(run, prefill, generated, caches)
            else:
                for r in run:
                    generated[r].append(0)
            cached |= set(run)
            now += max(1.0, prompt_tokens / PREFILL_TOKENS_PER_STEP)
            steps += 1
            for r in run:
                if len(generated[r]) == self.requests[r].max_new:
                    done[r] = now
                    finished.append(r)
                    cached.discard(r)
                    caches.pop(r, None)
        return {"time": now, "latency": {r: done[r] - self.requests[r].arrival for r in done}, "outputs": generated, "steps": steps}

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

    def _execute(self, run: list, prefill: list, generated: dict, caches: dict) -> None:
        """Prefill the new and the preempted (their prompt and tokens so far), then decode the others in one batch."""
        import torch

        model = self.model
        for r in prefill:
            tokens = self.requests[r].prompt + generated[r]
            cache = model.new_cache(1, max_seq_len=model.config.max_seq_len)
            logits = model.prefill(torch.tensor([tokens]), cache)
            caches[r] = cache
            generated[r].append(int(logits[0, -1].argmax()))
        decoding = [r for r in run if r not in prefill]
        if not decoding:
            return
        batch = model.new_cache(len(decoding), max_seq_len=model.config.max_seq_len)
        for i, r in enumerate(decoding):
            batch.k[:, i], batch.v[:, i], batch.lengths[i] = caches[r].k[:, 0], caches[r].v[:, 0], caches[r].lengths[0]
        logits = model.decode_step(torch.tensor([generated[r][-1] for r in decoding]), batch)
        for i, r in enumerate(decoding):
            caches[r].k[:, 0], caches[r].v[:, 0], caches[r].lengths[0] = batch.k[:, i], batch.v[:, i], batch.lengths[i]
            generated[r].append(int(logits[i].argmax()))

