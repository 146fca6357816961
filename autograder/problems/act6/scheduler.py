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
tail-latency bound, in model-step times on any machine).

Throughput is the hidden trace's makespan under static batching (the grader's own scheduler: fixed
batches, each request reserving blocks for its longest possible length) over the learner's. On a CPU
it is counted in model-step times, the same on any machine: a step costs one decode step
(memory-bound: its cost hardly depends on the batch) or, when it prefills more than
PREFILL_TOKENS_PER_STEP prompt tokens, proportionally more. On a GPU it is graded in time: the plans
both schedules made are replayed by the engine on the model there (batching_engine.wall_seconds;
the learner's process is gone by then), and tokens per second of each give the ratio; the ratio in
model-step times is reported beside it. The engine is batching_engine.py's; the traces, the baseline
and the score are here.
"""

from __future__ import annotations

import random

from ...problem import register
from ...python_problems import InteractiveProblem
from .batching_engine import Engine, Request, SchedulingError, blocks_for, wall_seconds

# The speed scale: the ratio of static batching's makespan to the learner's (in time on a GPU).
ZERO_AT, FULL_AT, SOLUTION_TARGET = 1.0, 1.5, 2.0


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

    def end(self) -> None:
        """Nothing to stop: the object lives in this process."""


def _model(device: str = "cpu"):
    import torch

    from ...tiny_config import TINY
    from ...tiny_transformer import TinyTransformer

    return TinyTransformer(TINY, seed=0, device=device, dtype=torch.float64)


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


def play(learner, seed: int, device: str = "cpu") -> dict:
    """The hidden trace (its throughput is the score), then a random trace drawn from the seed; on a
    GPU (``device`` "cuda") the hidden trace's throughput is graded in time."""
    import torch

    threads = torch.get_num_threads()
    # The model's operations are tiny: threads only add contention.
    torch.set_num_threads(1)
    try:
        return _play(learner, seed, device)
    finally:
        torch.set_num_threads(threads)


def _play(learner, seed: int, device: str) -> dict:
    from ...answers import LearnerFault

    model = _model()
    cases, hidden = [], None
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
            hidden = (requests, static, ran)
    learner.end()
    # Time is worth measuring only where speed points can follow: every case passed.
    timed_on = device if all(c["passed"] for c in cases) else "cpu"
    measured = {} if hidden is None else throughput(*hidden, timed_on)
    ratio = measured.get("throughput_ratio")
    fraction = 0.0 if ratio is None else min(1.0, max(0.0, (ratio - ZERO_AT) / (FULL_AT - ZERO_AT)))
    scale = f"0 points at {ZERO_AT:g}x, full at {FULL_AT:g}x; the reference solution reaches {SOLUTION_TARGET:g}x"
    if ratio is None:
        note = ""
    elif "time_ratio" in measured:
        note = (f"throughput on the hidden trace, graded in time on this GPU: {ratio:.2f}x static batching's "
                f"({measured['tokens_per_s']:,.0f} against {measured['static_tokens_per_s']:,.0f} tokens/s; {scale}); "
                f"in model-step times {measured['step_ratio']:.2f}x (not graded on a GPU)")
    else:
        note = f"throughput on the hidden trace, graded in model-step times: {ratio:.2f}x static batching's ({scale}; a GPU grades it in time)"
    return {"cases": cases, "speed_fraction": fraction, "speed_note": note, "measured": measured,
            "good": "every plan was carried out, within the budget, with the right tokens", "bad": "some plans could not be carried out"}


def throughput(requests: list, static: dict, ran: dict, device: str) -> dict:
    """Static batching's makespan over the learner's: in model-step times, and on a GPU in time (the
    graded one there), the engine replaying both recorded schedules on the model on the GPU."""
    measured = {"step_ratio": static["time"] / ran["time"]}
    measured["throughput_ratio"] = measured["step_ratio"]
    if device == "cuda":
        timed = wall_seconds(requests, {"static": static, "learner": ran}, _model(device))
        tokens = sum(q.max_new for q in requests)
        (static_s, _), (learner_s, outputs) = timed["static"], timed["learner"]
        measured.update(time_ratio=static_s / learner_s, tokens_per_s=tokens / learner_s, static_tokens_per_s=tokens / static_s,
                        seconds=learner_s, static_seconds=static_s, replay_equal=outputs == ran["outputs"])
        measured["throughput_ratio"] = measured["time_ratio"]
    return measured


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
