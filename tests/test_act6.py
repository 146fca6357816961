"""Act 6's Python exercises: hand-checked serving arithmetic, and the block manager's trace grading (a
property-based check against a model, run in-process on many seeds, then end to end in the grader's
child process), with known-wrong block managers that must fail."""

from __future__ import annotations

import pytest

from autograder import grading, jsonable, registry, source
from autograder.problems.act6 import block_manager as bm
from autograder.problems.act6 import serving_math as act6

SOLUTION = "solutions/act6-serving/block_manager.ipynb"
BLOCK_MANAGER = registry.get("act6.block_manager")


def test_hand_checked_serving_arithmetic():
    # Llama-3-8B: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 128 KiB a token; Llama-2-7B,
    # multi-head, four times that; Falcon-7B, multi-query (one KV head of 64), 8 KiB.
    llama3 = act6.kv_capacity(32, 8, 128, 2, 80 * 10**9, 16_060_000_000, 0.9, 16, 4096)
    assert llama3["bytes_per_token"] == 131_072
    # 72e9 - 16.06e9 = 55.94e9 bytes of blocks of 2 MiB: 26_674 blocks, 256 per 4096-token sequence.
    assert llama3 == {"bytes_per_token": 131_072, "blocks": 26_674, "tokens": 426_784, "max_batch": 104}
    assert act6.kv_capacity(32, 32, 128, 2, 10**9, 0, 1.0, 16, 1)["bytes_per_token"] == 524_288
    assert act6.kv_capacity(32, 1, 64, 2, 10**9, 0, 1.0, 16, 1)["bytes_per_token"] == 8_192
    assert act6.kv_capacity(1, 1, 1, 1, 100, 200, 1.0, 1, 1)["blocks"] == 0
    one = act6.decode_step_time(8e9, 2, 131_072, [1000], 3.35e12, 989e12)
    assert one["bound"] == "memory" and one["memory_seconds"] == pytest.approx((16e9 + 131_072_000) / 3.35e12)
    many = act6.decode_step_time(8e9, 2, 131_072, [16] * 512, 3.35e12, 989e12)
    assert many["bound"] == "compute" and many["tokens_per_s"] == pytest.approx(512 / (2 * 8e9 * 512 / 989e12))
    waste = act6.reservation_waste([15, 16, 17], [0, 0, 0], 4096, 16)
    assert waste["used"] == 48 and waste["static"] == 3 * 4096 and waste["paged"] == 16 + 16 + 32
    spec = act6.speculative_speedup(0.8, 4, 0.05)
    assert spec["tokens_per_pass"] == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)
    assert spec["speedup"] == pytest.approx(spec["tokens_per_pass"] / 1.2)
    assert act6.speculative_speedup(0.0, 4, 0.1)["speedup"] < 1.0
    assert act6.speculative_speedup(1.0, 7, 0.0)["tokens_per_pass"] == 8.0


# --- the block manager ------------------------------------------------------------------------------


def _solution_class():
    code = source.extract(source.notebook_cells(SOLUTION), "BlockManager")
    namespace: dict = {}
    exec(compile(code, SOLUTION, "exec"), namespace)
    return namespace["BlockManager"]


def run_traces(cls, seed: int) -> list[tuple[str, str | None]]:
    """What the worker and the judge do, in one process: each trace on a fresh object, every answer
    through the wire's plain-data encoding, then the problem's check. (label, failure or None) each."""
    verdicts = []
    for trace in BLOCK_MANAGER.make_traces(seed):
        obj = cls(**trace.constructor)
        answers, failure = [], None
        for method, kwargs in trace.calls:
            try:
                answers.append(jsonable.decode(jsonable.encode(getattr(obj, method)(**kwargs))))
            except Exception as exc:  # noqa: BLE001 -- a wrong class may raise; that fails its trace
                failure = f"raised {type(exc).__name__}: {exc}"
                break
        found = BLOCK_MANAGER.check(trace, answers)
        verdicts.append((trace.label, found or failure))
    return verdicts


@pytest.mark.parametrize("seed", range(6))
def test_the_solution_passes_every_trace(seed):
    failures = [(label, why) for label, why in run_traces(_solution_class(), seed) if why]
    assert not failures, failures[:3]


def test_the_model_keeps_its_own_invariants():
    """Over many random traces: counts equal the positions holding each block, the free count is what
    is left, and a refused operation changes nothing."""
    import random

    r = random.Random(0)
    for index in range(200):
        trace = bm._random_trace(r, index)
        for step in trace.expected:
            positions: dict = {}
            for table in step["tables"].values():
                for block in table:
                    positions[block] = positions.get(block, 0) + 1
            assert positions == step["refs"]
            for seq, table in step["tables"].items():
                assert len(table) == -(-step["lengths"][seq] // trace.constructor["block_size"])


def _wrong(name: str):
    """The solution with one method replaced: each a mistake a learner makes."""
    base = _solution_class()

    class NoCopyOnWrite(base):
        def append_token(self, seq_id):
            table, length = self.tables[seq_id], self.lengths[seq_id]
            if length % self.block_size == 0:
                if not self.free_list:
                    return False
                block = self.free_list.pop()
                self.refs[block] = 1
                table.append(block)
            self.lengths[seq_id] = length + 1
            return True

    class ForkCopies(base):
        def fork(self, parent_id, child_id):
            self.lengths[child_id] = self.lengths[parent_id]
            self.tables[child_id] = []
            for _ in self.tables[parent_id]:
                block = self.free_list.pop()
                self.refs[block] = 1
                self.tables[child_id].append(block)

    class Leaks(base):
        def free(self, seq_id):
            for block in self.tables.pop(seq_id):
                self.refs[block] -= 1
            del self.lengths[seq_id]

    class FreesShared(base):
        def free(self, seq_id):
            for block in self.tables.pop(seq_id):
                self.refs[block] = max(0, self.refs[block] - 1)
                self.free_list.append(block)
            del self.lengths[seq_id]

    class KeepsPartialAllocation(base):
        def allocate(self, seq_id, num_tokens, prefix_of=None, prefix_tokens=0):
            table = []
            for _ in range(-(-num_tokens // self.block_size)):
                if not self.free_list:
                    self.tables[seq_id], self.lengths[seq_id] = table, num_tokens
                    return False
                block = self.free_list.pop()
                self.refs[block] = 1
                table.append(block)
            self.tables[seq_id], self.lengths[seq_id] = table, num_tokens
            return True

    class IgnoresPrefix(base):
        def allocate(self, seq_id, num_tokens, prefix_of=None, prefix_tokens=0):
            return super().allocate(seq_id, num_tokens)

    class SharesPartialPrefixBlock(base):
        def allocate(self, seq_id, num_tokens, prefix_of=None, prefix_tokens=0):
            # The part-filled block of the prefix is shared too: the next write to it corrupts the other sequence.
            shared = self.tables[prefix_of][: -(-prefix_tokens // self.block_size)] if prefix_of is not None else []
            needed = -(-num_tokens // self.block_size) - len(shared)
            if needed > len(self.free_list):
                return False
            fresh = [self.free_list.pop() for _ in range(needed)]
            for block in shared + fresh:
                self.refs[block] += 1
            self.tables[seq_id], self.lengths[seq_id] = list(shared) + fresh, num_tokens
            return True

    class TablesPastTheCache(base):
        def block_table(self, seq_id):
            return [block + 1000 for block in self.tables[seq_id]]

    class RefCountIgnoresSharing(base):
        def ref_count(self, block):
            return min(self.refs[block], 1)

    class AlwaysAccepts(base):
        def append_token(self, seq_id):
            if not self.free_list and self.lengths[seq_id] % self.block_size == 0:
                self.lengths[seq_id] += 1
                self.tables[seq_id].append(self.tables[seq_id][-1] if self.tables[seq_id] else 0)
                return True
            return super().append_token(seq_id)

    return locals()[name]


WRONG = ["NoCopyOnWrite", "ForkCopies", "Leaks", "FreesShared", "KeepsPartialAllocation", "IgnoresPrefix", "SharesPartialPrefixBlock",
         "TablesPastTheCache", "RefCountIgnoresSharing", "AlwaysAccepts"]


@pytest.mark.parametrize("name", WRONG)
def test_wrong_block_managers_fail(name):
    verdicts = run_traces(_wrong(name), seed=3)
    failed = [why for _, why in verdicts if why]
    assert failed, f"{name} passed every trace"
    # The hidden traces alone catch every one of these mistakes.
    hidden = [why for label, why in verdicts if label.startswith("hidden") and why]
    assert hidden, f"{name} passed the hidden traces"


def test_failure_messages_name_the_call_and_the_fault():
    verdicts = dict(run_traces(_wrong("Leaks"), seed=0))
    assert "leaked" in verdicts[bm._beam_search().label]
    out_of_range = dict(run_traces(_wrong("TablesPastTheCache"), seed=0))
    assert "outside the cache" in next(why for why in out_of_range.values() if why)
    no_cow = dict(run_traces(_wrong("NoCopyOnWrite"), seed=0))[bm._beam_search().label]
    assert "append_token(seq_id=" in no_cow


def test_traces_are_fresh_for_every_seed():
    first, second = BLOCK_MANAGER.make_traces(1), BLOCK_MANAGER.make_traces(2)
    assert [t.calls for t in first[4:]] != [t.calls for t in second[4:]]
    assert [t.calls for t in first[:4]] == [t.calls for t in second[:4]]


# --- end to end, through the judge and the learner's worker ---------------------------------------------


def _grade(code: str, entry: str = "BlockManager") -> dict:
    return grading.grade_source(BLOCK_MANAGER, code, entry, device="cpu")


def test_the_solution_earns_full_marks_in_the_child():
    code = source.extract(source.notebook_cells(SOLUTION), "BlockManager")
    result = _grade(code)
    assert result["status"] == "PASS" and result["points"] == BLOCK_MANAGER.max_points == 3.0, result["message"]
    assert len(result["cases"]) == len(BLOCK_MANAGER.make_traces(0))


def test_a_class_that_raises_fails_and_names_the_call():
    code = source.extract(source.notebook_cells(SOLUTION), "BlockManager").replace(
        "    def fork(self, parent_id: int, child_id: int) -> None:\n", "    def fork(self, parent_id: int, child_id: int) -> None:\n        raise KeyError(parent_id)\n"
    )
    result = _grade(code)
    assert result["status"] == "FAIL" and result["points"] == 0
    assert any("fork(parent_id=" in c["message"] and "KeyError" in c["message"] for c in result["cases"])


def test_an_endless_loop_is_a_timeout_not_a_hang(monkeypatch):
    # The loop spins until the limit: a short one, which the worker's start (a fork) is far within.
    monkeypatch.setenv("AUTOGRADER_TIMEOUT", "6")
    code = "class BlockManager:\n    def __init__(self, num_blocks, block_size):\n        pass\n\n    def allocate(self, seq_id, num_tokens, prefix_of=None, prefix_tokens=0):\n        while True:\n            pass\n"
    result = _grade(code)
    assert result["status"] == "TIMEOUT" and result["points"] == 0, result["message"]
    assert "starting" not in result["message"], result["message"]


def test_a_missing_class_and_a_non_plain_answer_say_so():
    missing = _grade("class Blocks:\n    pass\n")
    assert missing["status"] == "ERROR" and "BlockManager" in missing["message"]
    code = source.extract(source.notebook_cells(SOLUTION), "BlockManager").replace("return list(self.tables[seq_id])", "return iter(self.tables[seq_id])")
    result = _grade(code)
    assert result["status"] == "FAIL" and any("not a number, string, list" in c["message"] for c in result["cases"])


def test_a_class_in_a_script_is_collected_with_what_it_uses(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text("import math\n\nUNUSED = 1\n\n\nclass BlockManager:\n    def __init__(self, num_blocks, block_size):\n        self.n = math.floor(num_blocks)\n")
    namespace: dict = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    code, entry = source.for_function(namespace["BlockManager"])
    assert entry == "BlockManager" and "class BlockManager" in code and "UNUSED" not in code


# --- the continuous-batching scheduler ----------------------------------------------------------------

from autograder.problems.act6 import scheduler as sched  # noqa: E402
from autograder.problems.act6.batching_engine import Engine  # noqa: E402

SCHEDULER = registry.get("act6.scheduler")
SCHEDULER_SOLUTION = "solutions/act6-serving/scheduler.ipynb"


def _scheduler_class(replace: tuple[str, str] | None = None):
    code = source.extract(source.notebook_cells(SCHEDULER_SOLUTION), "Scheduler")
    if replace:
        assert replace[0] in code
        code = code.replace(*replace)
    namespace: dict = {}
    exec(compile(code, SCHEDULER_SOLUTION, "exec"), namespace)
    return namespace["Scheduler"]


def _play(cls, seed: int = 0) -> dict:
    return SCHEDULER.play(sched._Local(cls), seed)


@pytest.fixture
def one_thread():
    """The engine's operations are tiny: on a busy machine, threads only contend (play does the same)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_scheduler_solution_reaches_its_target_and_full_marks():
    outcome = _play(_scheduler_class())
    assert all(c["passed"] for c in outcome["cases"]), outcome["cases"]
    assert outcome["measured"]["throughput_ratio"] >= SCHEDULER.solution_target == sched.SOLUTION_TARGET
    assert outcome["measured"]["throughput_ratio"] == outcome["measured"]["step_ratio"] and "time_ratio" not in outcome["measured"]
    assert outcome["speed_fraction"] == 1.0 and "graded in model-step times" in outcome["speed_note"]


def test_the_engine_batches_each_step_into_one_forward_over_its_slots(one_thread):
    # A trace tight on blocks: preemptions, re-prefills of prompt + tokens, several prefills in a step.
    requests = sched.make_trace(9, burst=16, stream=8, rate=1.0)
    model = sched._model()
    engine = Engine(requests, model)
    forwards = []
    step = engine.runner.step
    engine.runner.step = lambda decode, prefill: forwards.append((len(decode), len(prefill))) or step(decode, prefill)
    ran = engine.run(sched._Local(_scheduler_class()))
    assert len(forwards) == ran["busy"] and any(d and p > 1 for d, p in forwards), forwards
    assert any(plan["preempt"] for plan in ran["plans"]), "the trace should make the solution preempt"
    assert sched.greedy_mismatches(model, requests, ran["outputs"]) == []
    assert not engine.runner.slot and sorted(engine.runner.free) == list(range(engine.runner.slots))


def test_the_timed_replay_carries_out_the_recorded_plans(one_thread):
    """wall_seconds, as a GPU grading runs it, here on the CPU: the replays give the run's own tokens."""
    from autograder.problems.act6.batching_engine import wall_seconds

    requests = sched.make_trace(4, burst=6, stream=6, rate=0.3)
    model = sched._model()
    runs = {"static": sched.static_baseline(requests), "learner": Engine(requests, model).run(sched._Local(_scheduler_class()))}
    timed = wall_seconds(requests, runs, model, rounds=1)
    assert timed["learner"][1] == runs["learner"]["outputs"] and all(seconds > 0 for seconds, _ in timed.values())
    measured = sched.throughput(requests, runs["static"], runs["learner"], "cpu")
    assert measured == {"step_ratio": measured["throughput_ratio"], "throughput_ratio": runs["static"]["time"] / runs["learner"]["time"]}


def test_static_batching_is_correct_and_earns_no_throughput_points():
    outcome = _play(sched.StaticBatching)
    assert all(c["passed"] for c in outcome["cases"]), outcome["cases"]
    assert outcome["measured"]["throughput_ratio"] == pytest.approx(1.0) and outcome["speed_fraction"] == 0.0


def test_the_engine_generates_what_each_request_alone_generates(one_thread):
    requests = sched.make_trace(3, burst=6, stream=4, rate=0.5)
    model = sched._model()
    ran = Engine(requests, model).run(sched._Local(_scheduler_class()))
    from autograder.tiny_transformer import greedy_generate

    assert all(ran["outputs"][q.rid] == greedy_generate(model, q.prompt, q.max_new) for q in requests)
    assert sched.greedy_mismatches(model, requests, ran["outputs"]) == []
    broken = {rid: list(reversed(tokens)) for rid, tokens in ran["outputs"].items()}
    assert sched.greedy_mismatches(model, requests, broken), "reordered tokens were not caught"


WRONG_SCHEDULERS = {
    "admits past the budget": (("held + blocks_after_step(self.waiting[0]) <= self.kv_blocks", "True"), "more than the 64 there are"),
    "never runs anything": (('return {"run": list(self.running), "preempt": preempt}', 'return {"run": [], "preempt": []}'), "deadlock"),
    "forgets preempted requests": (("self.waiting.appendleft(victim)", "pass"), "deadlock"),
    "runs every waiting request": (("len(self.running) < self.max_batch and held + blocks_after_step(self.waiting[0]) <= self.kv_blocks", "True"), "more than max_batch"),
    "returns a list": (('return {"run": list(self.running), "preempt": preempt}', "return list(self.running)"), "not a dict"),
    "preempts without giving back": (("held -= blocks_after_step(victim)\n            preempt.append(victim)", "held -= blocks_after_step(victim)"), "more than the 64"),
}


@pytest.mark.parametrize("name", WRONG_SCHEDULERS)
def test_wrong_schedulers_fail_with_a_sentence(name):
    replace, expected = WRONG_SCHEDULERS[name]
    outcome = _play(_scheduler_class(replace))
    failed = [c["message"] for c in outcome["cases"] if not c["passed"]]
    assert failed and any(expected in m for m in failed), failed


def test_a_scheduler_that_makes_requests_wait_breaks_the_tail_latency_bound():
    # One request at a time: valid plans, right tokens, and the queue behind it waits far too long.
    one_at_a_time = _scheduler_class(("len(self.running) < self.max_batch", "len(self.running) < 1"))
    outcome = _play(one_at_a_time)
    assert any("longest wait" in c["size"] and not c["passed"] for c in outcome["cases"]), outcome["cases"]


def test_the_scheduler_is_graded_in_the_child_with_points_for_throughput():
    code = source.extract(source.notebook_cells(SCHEDULER_SOLUTION), "Scheduler")
    result = grading.grade_source(SCHEDULER, code, "Scheduler", device="cpu")
    assert result["status"] == "PASS" and result["points"] == SCHEDULER.max_points == 4.0, result["message"]
    assert "static batching" in result["speed_note"]
    hang = code.replace("def step(self, finished: list) -> dict:\n", "def step(self, finished: list) -> dict:\n        while True:\n            pass\n")
    import os

    os.environ["AUTOGRADER_TIMEOUT"] = "6"
    try:
        result = grading.grade_source(SCHEDULER, hang, "Scheduler", device="cpu")
    finally:
        del os.environ["AUTOGRADER_TIMEOUT"]
    assert result["status"] == "TIMEOUT" and result["points"] == 0, result["message"]
    assert "starting" not in result["message"], result["message"]
