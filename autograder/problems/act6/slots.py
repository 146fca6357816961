"""The model side of Act 6's batching engine (batching_engine.py): a slotted KV cache and one forward
per engine step, lean enough that a wall-clock replay on a GPU times the schedule, not the engine.

One cache of ``slots`` sequences is allocated once. A request takes a free slot when it is prefilled
and gives it back when it finishes or is preempted; its keys and values never move. A step is one
forward over a packed batch: the decoding requests' one token each, then the prefilled requests'
tokens, right-padded to the longest of them (padding only ever follows a row's real tokens, so the
causal mask keeps it out of every real token's attention, and its keys land past the row's length,
where no later query looks). The linear layers run once over all of it; attention runs once per
layer for the decoding rows, over their slots' cached keys (gathered by the slot index, the step's
only copy of the cache), and once for the prefilled rows, over their own fresh keys. Logits are
taken at each row's last real token only, and one copy to the host per step brings back every next
token. The host keeps every length, so nothing else waits for the device.
"""

from __future__ import annotations


class SlotRunner:
    """Carries out engine steps on ``model`` over a cache of ``slots`` sequences."""

    def __init__(self, model, slots: int) -> None:
        self.model = model
        self.cache = model.new_cache(slots, max_seq_len=model.config.max_seq_len)
        self.slots = slots
        self.reset()

    def reset(self) -> None:
        """Every slot free (what a freed slot still holds is past its length: never read)."""
        self.free = list(range(self.slots))[::-1]
        self.slot: dict = {}
        self.length: dict = {}

    def release(self, rid) -> None:
        """The request's cache is gone (finished or preempted): its slot is free again."""
        if rid in self.slot:
            self.free.append(self.slot.pop(rid))
            del self.length[rid]

    def step(self, decode: list, prefill: list) -> list:
        """``decode``: (rid, last token) of requests holding a cache; ``prefill``: (rid, tokens) of
        requests without one (they get a slot). Returns the next token of each, decode rows first."""
        import torch

        for rid, _ in prefill:
            if not self.free:
                raise RuntimeError(f"all {self.slots} cache slots are taken")
            self.slot[rid], self.length[rid] = self.free.pop(), 0
        # Each row: its request, its new tokens, and where they start in its slot.
        rows = [(rid, [token], self.length[rid]) for rid, token in decode] + [(rid, list(row), 0) for rid, row in prefill]
        b, s = len(rows), max(len(row) for _, row, _ in rows)
        starts = [start for _, _, start in rows]
        tokens = [t for _, row, _ in rows for t in row]
        positions = [start + i for _, row, start in rows for i in range(len(row))]
        token_slots = [self.slot[rid] for rid, row, _ in rows for _ in row]
        # Row r's token i sits at packed index first[r] + i and at padded index r * s + i.
        first = [0]
        for _, row, _ in rows:
            first.append(first[-1] + len(row))
        padded = [first[r] + min(i, len(row) - 1) for r, (_, row, _) in enumerate(rows) for i in range(s)]
        unpadded = [r * s + i for r, (_, row, _) in enumerate(rows) for i in range(len(row))]
        last = [first[r + 1] - 1 for r in range(b)]
        host = [self.slot[rid] for rid, _, _ in rows] + starts + last + tokens + positions + token_slots + unpadded + padded
        # One copy to the device: every index the step needs.
        data = torch.tensor(host, dtype=torch.int64).to(self.model.device)
        n = len(tokens)
        index = data.split([b, b, b, n, n, n, n, b * s])
        logits = self._forward(index, s, span=max(start + len(row) for _, row, start in rows))
        for rid, row, start in rows:
            self.length[rid] = start + len(row)
        return logits.argmax(-1).tolist()

    def _forward(self, index: tuple, s: int, span: int):
        """Packed rows through the model: the linear layers over the real tokens only, attention over
        [rows, s] (each row's tokens padded to the longest) against the rows' cached keys."""
        import torch

        model, cache, c = self.model, self.cache, self.model.config
        row_slots, starts, last, tokens, positions, token_slots, unpadded, padded = index
        b, heads, hd = row_slots.shape[0], c.n_heads, c.head_dim
        device = model.device
        # Query i of row r sits at position starts[r] + i and sees every key up to it (a padding query
        # sees the same keys as a real one: never none, and its output is dropped).
        seen = starts[:, None] + torch.arange(s, device=device)[None, :]
        mask = torch.arange(span, device=device)[None, None, :] <= seen[:, :, None]
        x = model.embed[tokens][None]
        for layer, block in enumerate(model.layers):
            q, k, v = model._qkv(block, x, positions[None])
            cache.k[layer, token_slots, :, positions] = k[0].transpose(0, 1)
            cache.v[layer, token_slots, :, positions] = v[0].transpose(0, 1)
            keys, values = cache.k[layer, row_slots, :, :span], cache.v[layer, row_slots, :, :span]
            queries = q[0] if s == 1 else q[0][:, padded]
            out = model._attend(queries.unflatten(1, (b, s)).transpose(0, 1), keys, values, mask)
            out = out.transpose(0, 1).reshape(heads, b * s, hd)
            x = model._output(block, x, (out if s == 1 else out[:, unpadded])[None])
        return model._logits(x[0, last])
