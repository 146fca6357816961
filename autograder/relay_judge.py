"""The judge's half of autograder.relay: the messages, all-reduces and crossings of a distributed
exercise's ranks, carried, computed and counted where the learner's code does not run."""

from __future__ import annotations

import math

from .ddp_model import BOUNDARY
from .relay import BARRIER_TAG, ELEMENT_BYTES, REDUCTIONS


class Relay:
    """The judge's half for one exchange of ``world`` ranks: each rank's message to another handed on
    while that rank is still in its call, and what every rank sent and received, as records in the
    form of autograder.ranks.CommRecord's (``c10d::send`` / ``c10d::recv_`` and elements)."""

    def __init__(self, world: int, allowed=(), additions=None) -> None:
        self.world, self.allowed = world, frozenset(allowed)
        # Each rank's additions at the crossings of autograder.ddp_model, by layer (judge only).
        self.additions = additions
        self.records: list[list] = [[] for _ in range(world)]
        # Each all-reduce's contributions by its number, until every rank has given its own.
        self.pending: dict[int, dict[int, tuple]] = {}

    def carry(self, source: int, header: dict, payload: bytes, deliver, answered) -> str | None:
        """Hand one message of ``source`` on (``deliver(rank, header, payload)``) unless its rank has
        answered (``answered(rank)``); an error message when the message names no other rank."""
        if header.get("collective") == "boundary":
            return self._cross(source, header, payload, deliver)
        if "collective" in header:
            return self._collect(source, header, payload, deliver, answered)
        dst, tag = header.get("relay"), header.get("tag")
        if not isinstance(dst, int) or not isinstance(tag, int) or isinstance(dst, bool) or not 0 <= dst < self.world or dst == source:
            return f"rank {source} sent a message to rank {dst!r}, which is not another rank of the group of {self.world}"
        if tag == BARRIER_TAG:
            self.records[source].append(["c10d::barrier", 0])
        else:
            elements = math.ceil(len(payload) / ELEMENT_BYTES)
            self.records[source].append(["c10d::send", elements])
            if not answered(dst):
                self.records[dst].append(["c10d::recv_", elements])
        if not answered(dst):
            deliver(dst, {"op": "relay_in", "src": source, "tag": tag}, payload)
        return None

    def _collect(self, source: int, header: dict, payload: bytes, deliver, answered) -> str | None:
        """One rank's part of an all-reduce; once every rank has given its own, the judge reduces them
        in rank order and hands the result to every rank still in its call."""
        import torch

        sequence, shape, dtype = header.get("sequence"), header.get("shape"), _dtypes().get(header.get("dtype"))
        if header.get("collective") not in self.allowed or header.get("reduce") not in REDUCTIONS:
            return f"rank {source} asked for {header.get('collective')!r}, which this exercise's group does not carry"
        if not isinstance(sequence, int) or not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape) or dtype is None:
            return f"rank {source} sent an all-reduce the judge cannot read"
        elements = math.prod(shape)
        if len(payload) != elements * dtype.itemsize or source in self.pending.get(sequence, {}):
            return f"rank {source} sent an all-reduce the judge cannot read"
        self.records[source].append(["c10d::allreduce_", elements])
        parts = self.pending.setdefault(sequence, {})
        parts[source] = (header["reduce"], dtype, tuple(shape), payload)
        if len(parts) < self.world:
            return None
        del self.pending[sequence]
        kinds = {part[:3] for part in parts.values()}
        if len(kinds) > 1:
            return f"the ranks' all-reduce number {sequence} differs between ranks: {sorted(str(k) for k in kinds)}"
        reduction = parts[0][0]
        tensors = [torch.frombuffer(bytearray(parts[r][3]), dtype=dtype).reshape(shape) if elements else torch.empty(shape, dtype=dtype) for r in range(self.world)]
        result = tensors[0].clone()
        for tensor in tensors[1:]:
            if reduction in ("SUM", "AVG"):
                result += tensor
            elif reduction == "PRODUCT":
                result *= tensor
            else:
                result = torch.maximum(result, tensor) if reduction == "MAX" else torch.minimum(result, tensor)
        if reduction == "AVG":
            result /= self.world
        data = result.contiguous().view(torch.uint8).numpy().tobytes() if elements else b""
        for rank in range(self.world):
            if not answered(rank):
                deliver(rank, {"op": "collective_in", "sequence": sequence}, data)
        return None

    def _cross(self, source: int, header: dict, payload: bytes, deliver) -> str | None:
        """A gradient at a layer's crossing: handed back to its rank with the judge's addition, and
        where it fell among the rank's all-reduces recorded (``BOUNDARY`` and the layer)."""
        import torch

        own = self.additions[source] if "boundary" in self.allowed and self.additions else None
        added = own.get(header.get("layer")) if isinstance(own, dict) else None
        if added is None or header.get("shape") != list(added.shape) or len(payload) != added.numel() * added.element_size():
            return f"rank {source} sent a gradient the judge does not expect at layer {header.get('layer')!r}"
        self.records[source].append([BOUNDARY, header["layer"]])
        result = torch.frombuffer(bytearray(payload), dtype=torch.float64).reshape(added.shape) + added
        deliver(source, {"op": "collective_in", "sequence": header.get("sequence")}, result.numpy().tobytes())
        return None


def _dtypes() -> dict:
    import torch

    return {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}

