"""Act 6, exercise 2: a paged KV-cache block manager (PagedAttention's allocator), graded as a stateful
class driven through traces of calls and checked against a simple model after every call.

The learner's ``BlockManager(num_blocks, block_size)`` hands out the cache's physical blocks to
sequences: ``allocate`` (a prompt, optionally sharing the full blocks of another sequence's prefix),
``append_token`` (one decoded token: a new block at a block boundary, a private copy when the last
block is shared: copy-on-write), ``fork`` (a child sharing every block of its parent: parallel
sampling, beam search), ``free``; and it answers ``block_table``, ``ref_count`` and
``num_free_blocks``. Which physical block ids it picks is its own business, so the check is up to a
relabelling: the sharing structure (which positions of which sequences hold the same block), every
reference count, the free count (no block leaked, none freed twice) and that a live block never
moves. Fixed scenarios come first (beam search, a shared system prompt, running out of blocks), then
random operation sequences drawn from the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ...problem import register
from ...python_problems import Trace, TraceProblem


@dataclass
class ModelBlockManager:
    """The simplest right allocator: model blocks are never-reused integers, a sequence is its length
    and its list of model blocks, a block's count is the number of sequence positions holding it."""

    num_blocks: int
    block_size: int
    lengths: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    refs: dict = field(default_factory=dict)
    next_block: int = 0

    def free_blocks(self) -> int:
        return self.num_blocks - len(self.refs)

    def _new_block(self) -> int:
        block, self.next_block = self.next_block, self.next_block + 1
        self.refs[block] = 1
        return block

    def _release(self, block: int) -> None:
        self.refs[block] -= 1
        if self.refs[block] == 0:
            del self.refs[block]

    def allocate(self, seq_id: int, num_tokens: int, prefix_of: int | None = None, prefix_tokens: int = 0) -> bool:
        shared = self.tables[prefix_of][: prefix_tokens // self.block_size] if prefix_of is not None else []
        needed = -(-num_tokens // self.block_size) - len(shared)
        if needed > self.free_blocks():
            return False
        for block in shared:
            self.refs[block] += 1
        self.tables[seq_id] = list(shared) + [self._new_block() for _ in range(needed)]
        self.lengths[seq_id] = num_tokens
        return True

    def append_token(self, seq_id: int) -> bool:
        table, length = self.tables[seq_id], self.lengths[seq_id]
        if length % self.block_size == 0:
            if self.free_blocks() == 0:
                return False
            table.append(self._new_block())
        elif self.refs[table[-1]] > 1:
            if self.free_blocks() == 0:
                return False
            self._release(table[-1])
            table[-1] = self._new_block()
        self.lengths[seq_id] = length + 1
        return True

    def fork(self, parent_id: int, child_id: int) -> None:
        self.tables[child_id] = list(self.tables[parent_id])
        self.lengths[child_id] = self.lengths[parent_id]
        for block in self.tables[child_id]:
            self.refs[block] += 1

    def free(self, seq_id: int) -> None:
        for block in self.tables.pop(seq_id):
            self._release(block)
        del self.lengths[seq_id]


OPERATIONS = ("allocate", "append_token", "fork", "free")


def _shown(method: str, kwargs: dict) -> str:
    return f"{method}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


class _TraceBuilder:
    """Applies operations to the model and lays out the calls: each operation, then the observations
    of the state after it (the free count, every live sequence's block table, every block's count)."""

    def __init__(self, label: str, num_blocks: int, block_size: int) -> None:
        self.model = ModelBlockManager(num_blocks, block_size)
        self.trace = Trace(label=label, constructor={"num_blocks": num_blocks, "block_size": block_size}, calls=[], expected=[])

    def op(self, method: str, **kwargs) -> None:
        result = getattr(self.model, method)(**kwargs)
        step = {"call": len(self.trace.calls), "shown": _shown(method, kwargs), "result": result}
        self.trace.calls.append((method, kwargs))
        step["observed_from"] = len(self.trace.calls)
        self.trace.calls.append(("num_free_blocks", {}))
        live = sorted(self.model.tables)
        for seq in live:
            self.trace.calls.append(("block_table", {"seq_id": seq}))
        for block in range(self.model.num_blocks):
            self.trace.calls.append(("ref_count", {"block": block}))
        step.update(live=live, tables={s: list(self.model.tables[s]) for s in live}, refs=dict(self.model.refs), lengths=dict(self.model.lengths))
        self.trace.expected.append(step)


def _beam_search() -> Trace:
    b = _TraceBuilder("hidden trace: beam search (fork a partly filled block four ways, then decode)", num_blocks=16, block_size=4)
    b.op("allocate", seq_id=0, num_tokens=10)
    for child in (1, 2, 3):
        b.op("fork", parent_id=0, child_id=child)
    for _ in range(3):
        for seq in (0, 1, 2, 3):
            b.op("append_token", seq_id=seq)
    b.op("free", seq_id=0)
    b.op("fork", parent_id=2, child_id=4)
    b.op("free", seq_id=2)
    for seq in (1, 3, 4):
        b.op("append_token", seq_id=seq)
    for seq in (1, 3, 4):
        b.op("free", seq_id=seq)
    return b.trace


def _system_prompt() -> Trace:
    b = _TraceBuilder("hidden trace: five requests sharing a 16-token system prompt", num_blocks=20, block_size=4)
    b.op("allocate", seq_id=100, num_tokens=18)
    for request in range(5):
        b.op("allocate", seq_id=request, num_tokens=16 + 3 * request + 1, prefix_of=100, prefix_tokens=16)
    # 18 shared tokens are four full blocks and half of a fifth: only the full ones are shared.
    b.op("allocate", seq_id=5, num_tokens=19, prefix_of=100, prefix_tokens=18)
    b.op("free", seq_id=100)
    for request in range(6):
        b.op("append_token", seq_id=request)
    # The cache is nearly full now: a long prompt does not fit and must change nothing.
    b.op("allocate", seq_id=7, num_tokens=40, prefix_of=3, prefix_tokens=16)
    for request in (4, 0, 5, 2, 1, 3):
        b.op("free", seq_id=request)
    return b.trace


def _out_of_blocks() -> Trace:
    b = _TraceBuilder("hidden trace: running out of blocks, then getting them back", num_blocks=5, block_size=2)
    b.op("allocate", seq_id=0, num_tokens=5)
    b.op("allocate", seq_id=1, num_tokens=4)
    b.op("append_token", seq_id=1)  # at a boundary: no block left, refused
    b.op("fork", parent_id=0, child_id=2)
    b.op("append_token", seq_id=2)  # copy-on-write needs a block: refused
    b.op("append_token", seq_id=0)  # same
    b.op("allocate", seq_id=3, num_tokens=1)  # refused too
    b.op("free", seq_id=1)
    b.op("append_token", seq_id=2)
    b.op("append_token", seq_id=0)
    b.op("append_token", seq_id=0)
    b.op("free", seq_id=2)
    b.op("free", seq_id=0)
    b.op("allocate", seq_id=4, num_tokens=10)
    return b.trace


def _aligned_fork() -> Trace:
    b = _TraceBuilder("hidden trace: fork at a block boundary (no copy needed)", num_blocks=8, block_size=4)
    b.op("allocate", seq_id=0, num_tokens=8)
    b.op("fork", parent_id=0, child_id=1)
    b.op("append_token", seq_id=0)
    b.op("append_token", seq_id=1)
    b.op("append_token", seq_id=1)
    b.op("allocate", seq_id=2, num_tokens=8, prefix_of=1, prefix_tokens=8)
    b.op("free", seq_id=1)
    b.op("free", seq_id=0)
    b.op("free", seq_id=2)
    return b.trace


HIDDEN_TRACES = (_beam_search, _system_prompt, _out_of_blocks, _aligned_fork)


def _random_trace(r: random.Random, index: int) -> Trace:
    block_size = r.choice((1, 2, 3, 4, 8, 16))
    num_blocks = r.randrange(4, 33)
    steps = r.randrange(20, 61)
    b = _TraceBuilder(f"random trace {index} ({steps} operations, {num_blocks} blocks of {block_size})", num_blocks, block_size)
    next_id = 0
    for _ in range(steps):
        live = sorted(b.model.tables)
        choice = r.choices(OPERATIONS, weights=(3, 8, 2, 2) if live else (1, 0, 0, 0))[0]
        if choice == "allocate":
            num_tokens = r.randrange(1, 3 * block_size + 2)
            if live and r.random() < 0.4:
                parent = r.choice(live)
                prefix = r.randrange(0, min(num_tokens, b.model.lengths[parent]) + 1)
                b.op("allocate", seq_id=next_id, num_tokens=num_tokens, prefix_of=parent, prefix_tokens=prefix)
            else:
                b.op("allocate", seq_id=next_id, num_tokens=num_tokens)
            next_id += 1
        elif choice == "append_token":
            b.op("append_token", seq_id=r.choice(live))
        elif choice == "fork":
            b.op("fork", parent_id=r.choice(live), child_id=next_id)
            next_id += 1
        else:
            b.op("free", seq_id=r.choice(live))
    return b.trace


def make_traces(seed: int) -> list:
    r = random.Random(seed)
    return [make() for make in HIDDEN_TRACES] + [_random_trace(r, i) for i in range(24)]


def check(trace: Trace, answers: list) -> str | None:
    """The first call whose answer disagrees with the model, up to a relabelling of physical blocks
    that must stay fixed while a block lives."""
    mapping: dict = {}  # model block -> learner block, for the blocks alive now
    num_blocks = trace.constructor["num_blocks"]
    for step in trace.expected:
        where = f"after call {step['call']} {step['shown']}"
        index = step["call"]
        if index >= len(answers):
            return None
        if step["result"] is not None and answers[index] != step["result"]:
            reason = " (not enough free blocks: it must return False and change nothing)" if step["result"] is False else ""
            return f"call {index} {step['shown']} returned {answers[index]!r}, expected {step['result']!r}{reason}"
        cursor = step["observed_from"]
        if cursor >= len(answers):
            return None
        expected_free = num_blocks - len(step["refs"])
        if answers[cursor] != expected_free:
            kind = "a block leaked (never returned to the free pool)" if isinstance(answers[cursor], int) and answers[cursor] < expected_free else "a block was freed twice or while still in use"
            return f"{where}: num_free_blocks() is {answers[cursor]!r}, expected {expected_free}: {kind}"
        cursor += 1
        fresh: dict = {}
        owner: dict = {}
        for seq in step["live"]:
            if cursor >= len(answers):
                return None
            table = answers[cursor]
            cursor += 1
            expected = step["tables"][seq]
            if not isinstance(table, (list, tuple)) or len(table) != len(expected):
                return f"{where}: block_table(seq_id={seq}) is {table!r}, expected {len(expected)} blocks for its {step['lengths'][seq]} tokens"
            for position, (model_block, block) in enumerate(zip(expected, table, strict=True)):
                if not isinstance(block, int) or isinstance(block, bool) or not 0 <= block < num_blocks:
                    return f"{where}: block_table(seq_id={seq})[{position}] is {block!r}, outside the cache's blocks 0..{num_blocks - 1}"
                if fresh.setdefault(model_block, block) != block:
                    return f"{where}: block_table(seq_id={seq})[{position}] is block {block}, but that position shares block {fresh[model_block]} with another sequence (it was forked or shares a prefix, and was not written since)"
                if owner.setdefault(block, model_block) != model_block:
                    return f"{where}: block {block} is in block_table(seq_id={seq})[{position}] and also holds different tokens of another sequence: one physical block handed out twice"
        for model_block, block in fresh.items():
            if model_block in mapping and mapping[model_block] != block:
                return f"{where}: a block that was not written moved from {mapping[model_block]} to {block} (blocks change only on copy-on-write)"
        mapping = fresh
        for block in range(num_blocks):
            if cursor >= len(answers):
                return None
            got = answers[cursor]
            cursor += 1
            expected = step["refs"][owner[block]] if block in owner else 0
            if got != expected:
                return f"{where}: ref_count({block}) is {got!r}, expected {expected} (the number of sequence positions holding it)"
    return None


register(
    TraceProblem(
        name="act6.block_manager",
        title="A paged KV-cache block manager with copy-on-write",
        notebook="act6-serving/block_manager",
        function="BlockManager",
        arguments=("num_blocks", "block_size"),
        make_traces=make_traces,
        check=check,
        correctness_points=3.0,
    )
)
