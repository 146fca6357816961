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

from itertools import chain


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
        import numpy as np
        import torch

        for rid, _ in prefill:
            if not self.free:
                raise RuntimeError(f"all {self.slots} cache slots are taken")
            self.slot[rid], self.length[rid] = self.free.pop(), 0
        # Each row: its request's slot, where its new tokens start there, and how many they are.
        rids = [rid for rid, _ in decode] + [rid for rid, _ in prefill]
        slots = np.array([self.slot[rid] for rid in rids], dtype=np.int64)
        starts = np.array([self.length[rid] for rid, _ in decode] + [0] * len(prefill), dtype=np.int64)
        counts = np.array([1] * len(decode) + [len(row) for _, row in prefill], dtype=np.int64)
        b, s = len(rids), int(counts.max())
        tokens = np.fromiter(chain((token for _, token in decode), *(row for _, row in prefill)), dtype=np.int64)
        # Row r's token i sits at packed index first[r] + i and at padded index r * s + i.
        first = np.concatenate([[0], np.cumsum(counts)])
        n = int(first[-1])
        offset = np.arange(n) - np.repeat(first[:-1], counts)
        parts = [slots, starts, first[1:] - 1, tokens, np.repeat(starts, counts) + offset, np.repeat(slots, counts)]
        if s > 1:
            parts.append(np.repeat(np.arange(b) * s, counts) + offset)
            parts.append((first[:-1, None] + np.minimum(np.arange(s)[None, :], counts[:, None] - 1)).ravel())
        # One copy to the device: every index the step needs.
        data = torch.from_numpy(np.concatenate(parts)).to(self.model.device)
        index = data.split([b, b, b, n, n, n] + ([n, b * s] if s > 1 else []))
        logits = self._forward(index, s, span=int((starts + counts).max()))
        for rid, start, count in zip(rids, starts.tolist(), counts.tolist(), strict=True):
            self.length[rid] = start + count
        return logits.argmax(-1).tolist()

    def _forward(self, index: tuple, s: int, span: int):
        """Packed rows through the model: the linear layers over the real tokens only, attention over
        [rows, s] (each row's tokens padded to the longest) against the rows' cached keys."""
        import torch

        model, cache, c = self.model, self.cache, self.model.config
        row_slots, starts, last, tokens, positions, token_slots, *padding = index
        unpadded, padded = padding if s > 1 else (None, None)
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
