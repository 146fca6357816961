"""Act 3, exercise 3.5, first part: the peak of a memory snapshot.

The snapshots are drawn from a seed in the format of ``torch.cuda.memory._snapshot()``: "segments"
(the caching allocator's reserved memory, split into blocks whose state says whether a tensor holds
them at snapshot time) and "device_traces" (one list per device of the allocator's actions since
recording started). Each simulates one training step of a stack of MLP blocks as the allocator sees
it: parameters and optimizer state allocated before recording started (they appear only in
"segments"), last step's gradients freed by ``zero_grad`` (freed in the trace without an "alloc"),
the forward pass allocating activations, the backward pass freeing them while it allocates
gradients, addresses reused once freed, frees requested on a second stream and completed later,
and segment events (reserved memory, not allocated) in between.
"""

from __future__ import annotations

import random

LIVE_STATES = ("active_allocated", "active_awaiting_free")
TOP_LIVE = 5
# What the CUDA caching allocator rounds every block up to.
ROUND = 512
SEGMENT = 20 << 20
MAIN_STREAM, SIDE_STREAM = 0, 94_830_001_234_560


def _name(entry: dict) -> str:
    frames = entry.get("frames") or []
    return frames[0].get("name", "") if frames else ""


def peak_from_snapshot(snapshot: dict) -> dict:
    """The grader's reading of the contract the learner's ``peak_from_snapshot`` states."""
    traces = snapshot.get("device_traces") or [[]]
    events = traces[0] if traces else []
    first, live_at_end = {}, {}
    for entry in events:
        action = entry.get("action")
        if action not in ("alloc", "free_requested", "free_completed"):
            continue
        first.setdefault(entry["addr"], entry)
        if action == "alloc":
            live_at_end[entry["addr"]] = True
        elif action == "free_completed":
            live_at_end[entry["addr"]] = False
    # Allocated before recording started: freed in the trace before any alloc of its address, or
    # held at snapshot time with no alloc in the trace that is still live.
    initial = {addr: (e["size"], _name(e)) for addr, e in first.items() if e["action"] != "alloc"}
    for segment in snapshot.get("segments", []):
        for block in segment.get("blocks", []):
            if block.get("state") in LIVE_STATES and block["address"] not in initial and not live_at_end.get(block["address"], False):
                initial[block["address"]] = (block["size"], _name(block))
    peak_index, peak = -1, sum(size for size, _ in initial.values())
    live, total = dict(initial), peak
    for index, entry in enumerate(events):
        total += _replay(live, entry)
        if total > peak:
            peak, peak_index = total, index
    live = dict(initial)
    for entry in events[: peak_index + 1]:
        _replay(live, entry)
    largest = sorted(live.values(), key=lambda pair: (-pair[0], pair[1]))[:TOP_LIVE]
    return {"peak_bytes": peak, "peak_index": peak_index, "live_at_peak": [[size, name] for size, name in largest]}


def _replay(live: dict, entry: dict) -> int:
    """Apply one event to the live allocations (address -> (bytes, name)); the change in bytes.
    Only an alloc and a completed free change what is allocated."""
    action = entry.get("action")
    if action == "alloc":
        live[entry["addr"]] = (entry["size"], _name(entry))
        return entry["size"]
    if action == "free_completed" and entry["addr"] in live:
        return -live.pop(entry["addr"])[0]
    return 0


# --- The snapshots --------------------------------------------------------------------------------


def _frames(name: str, line: int) -> list[dict]:
    """A stack as the allocator records it: the innermost frame (the one the exercise names) first."""
    return [{"filename": "train.py", "line": line, "name": name}, {"filename": "train.py", "line": 200, "name": "training_step"}, {"filename": "train.py", "line": 260, "name": "main"}]


class _Recorder:
    """The allocator's side of one step: addresses (a freed block's address is reused by the next
    block of the same size once its free has completed), the trace, and reserved segments."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.events: list[dict] = []
        self.time_us = r.randrange(10**12, 2 * 10**12)
        self.reusable: dict[int, list[int]] = {}
        self.next_address = 0x7F00_0000_0000
        self.reserved_end = self.next_address
        self.live: dict[int, tuple[int, dict]] = {}
        self.pending: list[tuple[int, int]] = []

    def _event(self, action: str, addr: int, size: int, name: str, stream: int = MAIN_STREAM) -> None:
        self.time_us += self.r.randrange(2, 400)
        self.events.append({"action": action, "addr": addr, "size": size, "stream": stream, "time_us": self.time_us, "frames": _frames(name, self.r.randrange(20, 180))})

    def address_for(self, size: int) -> int:
        reusable = self.reusable.get(size)
        if reusable:
            return reusable.pop()
        addr = self.next_address
        self.next_address += size
        while self.next_address > self.reserved_end:
            # A new segment: reserved memory, which the exercise does not count.
            kind = self.r.choice(("segment_alloc", "segment_alloc", "segment_map"))
            self._event(kind, self.reserved_end, SEGMENT, "cudaMalloc")
            self.reserved_end += SEGMENT
        return addr

    def alloc(self, size: int, name: str, stream: int = MAIN_STREAM) -> int:
        size = -(-size // ROUND) * ROUND
        addr = self.address_for(size)
        self._event("alloc", addr, size, name, stream)
        self.live[addr] = (size, self.events[-1])
        return addr

    def free(self, addr: int, name: str, delay: bool = False) -> None:
        """Free requested now; completed now, or (``delay``: a block another stream still uses)
        after some of the next events."""
        size, _ = self.live[addr]
        self._event("free_requested", addr, size, name, self.live[addr][1]["stream"])
        if delay:
            self.pending.append((addr, len(self.events) + self.r.randrange(2, 12)))
        else:
            self._complete(addr)

    def _complete(self, addr: int) -> None:
        size, allocated = self.live.pop(addr)
        self._event("free_completed", addr, size, _name(allocated) or "free", allocated["stream"])
        self.reusable.setdefault(size, []).append(addr)

    def settle(self, everything: bool = False) -> None:
        """Complete the delayed frees that are due (all of them with ``everything``)."""
        due = [p for p in self.pending if everything or p[1] <= len(self.events)]
        for pair in due:
            self.pending.remove(pair)
            self._complete(pair[0])

    def noise(self) -> None:
        """Events that change no allocation: an unused segment returned, a snapshot, an OOM retried."""
        kind = self.r.choice(("segment_free", "segment_unmap", "snapshot", "oom"))
        self.time_us += 50
        entry = {"action": kind, "size": self.r.choice((SEGMENT, 2 * SEGMENT)), "stream": MAIN_STREAM, "time_us": self.time_us, "frames": []}
        if kind != "oom":
            entry["addr"] = 0x7E00_0000_0000 + self.r.randrange(64) * SEGMENT
        self.events.append(entry)


def _training_step(r: random.Random) -> dict:
    layers, width, tokens = r.randrange(2, 7), r.choice((256, 512, 768, 1024)), r.choice((512, 1024, 2048, 4096))
    rec = _Recorder(r)
    before: list[tuple[int, int, str]] = []
    weights = [(f"layers.{i}.{part}", size) for i in range(layers) for part, size in (("up.weight", 16 * width * width), ("down.weight", 16 * width * width), ("norm.weight", 4 * width))]
    for name, size in weights:
        # Parameters and Adam's two moments, from before recording: only "segments" show them.
        for what in ("", ".exp_avg", ".exp_avg_sq"):
            before.append((rec.address_for(size), size, f"{name}{what}" if what else "build_model"))
    old_grads = [(rec.address_for(size), size) for _, size in weights]
    if r.random() < 0.8:
        # zero_grad(set_to_none=True): last step's gradients freed, never allocated in this trace.
        for addr, size in old_grads:
            rec.live[addr] = (size, {"stream": MAIN_STREAM, "frames": _frames("zero_grad", 90)})
            rec.free(addr, "zero_grad")
    else:
        before += [(addr, size, "previous_step.grad") for addr, size in old_grads]
    act, hidden = 4 * tokens * width, 16 * tokens * width
    x = rec.alloc(act, "load_batch")
    saved = []
    for i in range(layers):
        side = rec.alloc(hidden, f"layers.{i}.prefetch", SIDE_STREAM) if r.random() < 0.4 else None
        norm = rec.alloc(act, f"layers.{i}.norm")
        stats = rec.alloc(8 * tokens, f"layers.{i}.norm")
        up = rec.alloc(hidden, f"layers.{i}.up")
        gelu = rec.alloc(hidden, f"layers.{i}.gelu")
        down = rec.alloc(act, f"layers.{i}.down")
        out = rec.alloc(act, f"layers.{i}.residual")
        rec.free(down, f"layers.{i}.residual")
        # LayerNorm's backward needs the block's input: it lives until then.
        saved.append((x, norm, stats, up, gelu))
        if side is not None:
            rec.free(side, f"layers.{i}.prefetch", delay=True)
        if r.random() < 0.3:
            rec.noise()
        rec.settle()
        x = out
    loss = rec.alloc(ROUND, "loss")
    grad = rec.alloc(act, "loss.backward")
    for i in reversed(range(layers)):
        block_input, norm, stats, up, gelu = saved[i]
        grad_hidden = rec.alloc(hidden, f"layers.{i}.down.backward")
        for part, size in (("down.weight", 16 * width * width), ("up.weight", 16 * width * width), ("norm.weight", 4 * width)):
            rec.alloc(size, f"layers.{i}.{part}.grad")
        rec.free(gelu, f"layers.{i}.down.backward", delay=r.random() < 0.5)
        grad_up = rec.alloc(hidden, f"layers.{i}.gelu.backward")
        rec.free(grad_hidden, f"layers.{i}.gelu.backward")
        rec.free(up, f"layers.{i}.gelu.backward")
        new_grad = rec.alloc(act, f"layers.{i}.up.backward")
        rec.free(grad_up, f"layers.{i}.up.backward")
        rec.free(norm, f"layers.{i}.norm.backward")
        rec.free(stats, f"layers.{i}.norm.backward")
        rec.free(block_input, f"layers.{i}.norm.backward")
        rec.free(grad, f"layers.{i}.norm.backward")
        grad = new_grad
        if r.random() < 0.3:
            rec.noise()
        rec.settle()
    rec.free(grad, "loss.backward")
    rec.free(loss, "training_step")
    for name, size in weights[: r.randrange(1, len(weights) + 1)]:
        # Adam's update makes a temporary per parameter.
        rec.free(rec.alloc(size, f"adam.{name}"), "adam", delay=r.random() < 0.2)
    rec.settle(everything=r.random() < 0.7)
    return _snapshot(rec, before)


def _snapshot(rec: _Recorder, before: list[tuple[int, int, str]]) -> dict:
    """The snapshot taken after the step: every block held now (pre-existing ones included), the
    blocks awaiting a free on another stream, and the free ones, in segments of a few blocks."""
    blocks = [{"address": addr, "size": size, "requested_size": size, "state": "active_allocated", "frames": _frames(name, 30)} for addr, size, name in before]
    for addr, (size, allocated) in rec.live.items():
        waiting = any(addr == pending for pending, _ in rec.pending)
        blocks.append({"address": addr, "size": size, "requested_size": size, "state": "active_awaiting_free" if waiting else "active_allocated", "frames": allocated["frames"]})
    blocks += [{"address": addr, "size": size, "requested_size": size, "state": "inactive", "frames": []} for size, addrs in rec.reusable.items() for addr in addrs]
    blocks.sort(key=lambda b: b["address"])
    segments = []
    for start in range(0, len(blocks), 6):
        group = blocks[start : start + 6]
        held = sum(b["size"] for b in group if b["state"] != "inactive")
        segments.append({"device": 0, "address": group[0]["address"], "total_size": sum(b["size"] for b in group), "stream": MAIN_STREAM, "segment_type": "large",
                         "allocated_size": sum(b["size"] for b in group if b["state"] == "active_allocated"), "active_size": held, "blocks": group})
    return {"segments": segments, "device_traces": [rec.events]}


def _edge_cases(r: random.Random) -> list[dict]:
    """A snapshot without a trace; one whose trace only frees what existed before it; one whose
    peak is its very first event."""
    step = _training_step(r)
    held = {"segments": step["segments"], "device_traces": []}
    rec = _Recorder(r)
    before = [(rec.address_for(size), size, name) for size, name in ((4 << 20, "build_model"), (4 << 20, "layers.0.up.weight.exp_avg"), (1 << 20, "build_model"))]
    for addr, size, _ in before[:2]:
        rec.live[addr] = (size, {"stream": MAIN_STREAM, "frames": _frames("zero_grad", 90)})
        rec.free(addr, "zero_grad")
    rec.noise()
    freed_only = _snapshot(rec, before[2:])
    rec = _Recorder(r)
    # Reserved ahead, so that no segment event comes first.
    rec.reserved_end += 8 * SEGMENT
    small = [(rec.address_for(1 << 20), 1 << 20, "build_model")]
    big = rec.alloc(64 << 20, "load_batch")
    rec.free(big, "training_step")
    rec.free(rec.alloc(8 << 20, "layers.0.up"), "layers.0.up")
    first = _snapshot(rec, small)
    return [held, freed_only, first]


def snapshot_cases(seed: int) -> list[dict]:
    r = random.Random(seed)
    return [dict(snapshot=s) for s in _edge_cases(r)] + [dict(snapshot=_training_step(r)) for _ in range(8)]


def describe_snapshot_case(case: dict) -> str:
    snapshot = case["snapshot"]
    traces = snapshot.get("device_traces") or [[]]
    blocks = sum(len(s["blocks"]) for s in snapshot["segments"])
    return f"a snapshot of {len(traces[0] if traces else [])} trace events and {blocks} blocks"
