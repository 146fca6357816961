"""Act 6, exercise 4: a continuous-batching scheduler, graded by carrying out its decisions.

The learner's ``Scheduler(kv_blocks, block_size, max_batch)`` only decides; the grader's engine, in the
judge, does everything else. Each engine step it tells the scheduler which requests arrived
(``add_request``) and which finished in the previous step, and asks ``step(finished)`` for a plan:
``{"run": [ids], "preempt": [ids]}``. A request in ``run`` without a KV cache is prefilled (its prompt
and every token it has generated so far, recomputed after a preemption); one with a cache decodes one
token. A preempted request loses its cache. Requests neither run nor preempted keep their cache and
wait. The engine runs the tiny random-weight transformer (float64, so batching cannot flip a greedy
choice) on every plan and checks, per trace: every plan valid, the KV cache never over its blocks,
no deadlock, every request finished with exactly the tokens greedy generation of it alone gives, and
no request waiting longer than the worst wait of static batching on the same trace (the stated
tail-latency bound).

Throughput is counted in model-step times, the same on any machine: a step costs one decode step
(memory-bound: its cost hardly depends on the batch) or, when it prefills more than
PREFILL_TOKENS_PER_STEP prompt tokens, proportionally more. The score is the hidden trace's makespan
under static batching (the grader's own scheduler: fixed batches, each request reserving blocks for
its longest possible length) over the learner's.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ...problem import register
from ...python_problems import InteractiveProblem

PREFILL_TOKENS_PER_STEP = 256
BLOCK_SIZE = 16
KV_BLOCKS = 64
MAX_BATCH = 32
IDLE_STEPS_LIMIT = 50
# The speed scale: the ratio of static batching's makespan to the learner's.
ZERO_AT, FULL_AT, SOLUTION_TARGET = 1.0, 1.5, 2.0


@dataclass
class Request:
    rid: int
    arrival: float
    prompt: list
    max_new: int


def make_trace(seed: int, burst: int, stream: int, rate: float, vocab: int = 256, max_len: int = 256) -> list:
    """``burst`` requests at time 0, then ``stream`` more arriving at ``rate`` per step-time. Prompts of
    8 to 48 tokens; answers with a long tail (most short, a few over 100 tokens)."""
    r = random.Random(seed)
    requests, now = [], 0.0
    for rid in range(burst + stream):
        if rid >= burst:
            now += r.expovariate(rate)
        prompt = [r.randrange(vocab) for _ in range(r.randint(8, 48))]
        max_new = max(2, min(max_len - len(prompt), int(r.lognormvariate(3.0, 0.9))))
        requests.append(Request(rid, round(now, 3), prompt, max_new))
    return requests


HIDDEN_SEED = 20261125


def hidden_trace() -> list:
    return make_trace(HIDDEN_SEED, burst=40, stream=24, rate=0.5)


def blocks_for(tokens: int) -> int:
    return math.ceil(tokens / BLOCK_SIZE)


class StaticBatching:
    """The baseline: admit a batch (in arrival order, up to MAX_BATCH, each request reserving blocks for
    its prompt and its longest answer) only when the previous batch has completely finished."""

    def __init__(self, kv_blocks: int, block_size: int, max_batch: int):
        self.kv_blocks, self.max_batch = kv_blocks, max_batch
        self.waiting, self.batch, self.unfinished, self.sizes = [], [], set(), {}

    def add_request(self, request_id: int, prompt_len: int, max_new_tokens: int) -> None:
        self.waiting.append(request_id)
        self.sizes[request_id] = prompt_len + max_new_tokens

    def step(self, finished: list) -> dict:
        self.unfinished -= set(finished)
        if not self.unfinished:
            self.batch, reserved = [], 0
            while self.waiting and len(self.batch) < self.max_batch and reserved + blocks_for(self.sizes[self.waiting[0]]) <= self.kv_blocks:
                rid = self.waiting.pop(0)
                reserved += blocks_for(self.sizes[rid])
                self.batch.append(rid)
            self.unfinished = set(self.batch)
        return {"run": [rid for rid in self.batch if rid in self.unfinished], "preempt": []}


class _Local:
    """The grader's own scheduler (the baseline), called in this process with the learner's interface."""

    def __init__(self, cls) -> None:
        self.cls = cls

    def new(self, **constructor) -> None:
        self.obj = self.cls(**constructor)

    def call(self, method: str, **kwargs):
        return getattr(self.obj, method)(**kwargs)


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


def _model():
    import torch

    from ...tiny_config import TINY
    from ...tiny_transformer import TinyTransformer

    return TinyTransformer(TINY, seed=0, dtype=torch.float64)


def static_baseline(requests: list) -> dict:
    return Engine(requests).run(_Local(StaticBatching))


def greedy_mismatches(model, requests: list, outputs: dict) -> list:
    """The requests whose tokens are not what greedy generation of the request alone gives. One causal
    forward over prompt + tokens checks them all: greedy output is the one sequence in which every token
    is the argmax of the logits before it."""
    import torch

    wrong = []
    for q in requests:
        tokens = outputs[q.rid]
        if len(tokens) != q.max_new:
            wrong.append(q.rid)
            continue
        logits = model(torch.tensor([q.prompt + tokens[:-1]]))[0, len(q.prompt) - 1 :]
        if logits.argmax(-1).tolist() != tokens:
            wrong.append(q.rid)
    return wrong


def play(learner, seed: int) -> dict:
    """The hidden trace (its throughput is the score), then a random trace drawn from the seed."""
    import torch

    threads = torch.get_num_threads()
    # The model's operations are tiny: threads only add contention.
    torch.set_num_threads(1)
    try:
        return _play(learner, seed)
    finally:
        torch.set_num_threads(threads)


def _play(learner, seed: int) -> dict:
    from ...answers import LearnerFault

    model = _model()
    cases, ratio = [], None
    traces = [("hidden trace", hidden_trace()), ("random trace", make_trace(seed, burst=12, stream=12, rate=0.4))]
    for label, requests in traces:
        static = static_baseline(requests)
        try:
            ran = Engine(requests, model).run(learner)
        except (SchedulingError, LearnerFault) as exc:
            cases.append({"size": f"{label}: plans valid, within the KV budget, every request finished", "passed": False, "message": str(exc)})
            continue
        cases.append({"size": f"{label}: plans valid, within the KV budget, every request finished", "passed": True, "message": ""})
        wrong = greedy_mismatches(model, requests, ran["outputs"])
        cases.append({
            "size": f"{label}: every request's tokens equal generating it alone",
            "passed": not wrong,
            "message": f"requests {wrong[:5]} differ (the engine recomputes a preempted request from its prompt and tokens so far)" if wrong else "",
        })
        worst, bound = max(ran["latency"].values()), max(static["latency"].values())
        cases.append({
            "size": f"{label}: longest wait {worst:,.0f} step-times, at most static batching's {bound:,.0f}",
            "passed": worst <= bound,
            "message": "" if worst <= bound else "a request waited longer than static batching would make it wait: a scheduler must not starve anyone",
        })
        if label == "hidden trace":
            ratio = static["time"] / ran["time"]
    fraction = 0.0 if ratio is None else min(1.0, max(0.0, (ratio - ZERO_AT) / (FULL_AT - ZERO_AT)))
    note = "" if ratio is None else (
        f"throughput on the hidden trace {ratio:.2f}x static batching's, in model-step times "
        f"(0 points at {ZERO_AT:g}x, full at {FULL_AT:g}x; the reference solution reaches {SOLUTION_TARGET:g}x)"
    )
    return {"cases": cases, "speed_fraction": fraction, "speed_note": note, "measured": {"throughput_ratio": ratio},
            "good": "every plan was carried out, within the budget, with the right tokens", "bad": "some plans could not be carried out"}


register(
    InteractiveProblem(
        name="act6.scheduler",
        title="A continuous-batching scheduler",
        notebook="act6-serving/scheduler",
        function="Scheduler",
        arguments=("kv_blocks", "block_size", "max_batch"),
        play=play,
        correctness_points=2.0,
        speed_points=2.0,
        solution_target=SOLUTION_TARGET,
    )
)
