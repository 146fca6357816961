"""Point-to-point messages between a distributed exercise's ranks, carried by the judge (Act 5's ring).

A record of communication kept in the learner's process can be edited or switched off by the code it
records (a dispatch mode can be disabled, its list appended to), and ranks that share a network can
build a process group of their own and run the library's all-reduce beside a few dummy sends. So for
a problem whose ``relay`` is set the ranks have no network and no group of the library: the process
group they join (``RelayGroup``, torch.distributed's default group) sends each message to the judge
through the worker's channel, and the judge (``Relay``) hands it to the rank it names and counts it.
What a rank sent and received is what the judge carried, and the library's collectives have nothing
to run on: each of them raises ``LibraryCollectiveRefused``.

Worker side: ``join(rank, world, post, take)``; judge side: ``Relay`` inside
autograder.distributed_ranks.Ranks.exchange.
"""

from __future__ import annotations

import collections
import functools
import math

BACKEND = "grader_relay"
# dist.barrier's messages: a tag no send of the learner's can take (dist.send's tags are >= 0 in use).
BARRIER_TAG = -7177
# The ring's traffic rule counts elements of its float32 vectors.
ELEMENT_BYTES = 4
COLLECTIVES = ("allreduce", "allreduce_coalesced", "broadcast", "allgather", "allgather_coalesced", "_allgather_base",
               "allgather_into_tensor_coalesced", "reduce", "reduce_scatter", "_reduce_scatter_base",
               "reduce_scatter_tensor_coalesced", "alltoall", "alltoall_base", "gather", "scatter")


class LibraryCollectiveRefused(RuntimeError):
    """A collective of torch.distributed called on the grader's group: the library's algorithm."""


# -- worker side -----------------------------------------------------------------------------------------
def join(rank: int, world: int, post, take) -> None:
    """Make the relay the default process group of this rank. ``post(header, payload)`` sends to the
    judge and ``take()`` waits for the judge's next message (the worker's channel)."""
    import torch.distributed as dist

    group = _group_class()
    if not hasattr(dist.Backend, BACKEND.upper()):
        dist.Backend.register_backend(BACKEND, lambda store, r, w, timeout: group(r, w, *_ENDS), devices=["cpu"])
    _ENDS[:] = [post, take]
    dist.init_process_group(BACKEND, store=dist.HashStore(), rank=rank, world_size=world)


# The worker's two ends of its channel, for the group the next join makes.
_ENDS: list = []


@functools.cache
def _group_class():
    import torch
    import torch.distributed as dist

    class Done(dist._Work):
        """A request that is complete once ``wait`` has run its ``finish`` (a receive), or at once."""

        def __init__(self, finish=None) -> None:
            super().__init__()
            self._finish, self._source = finish, -1
            self._future = torch.futures.Future()
            if finish is None:
                self._future.set_result(None)

        def wait(self, timeout=None) -> bool:
            if self._finish is not None:
                finish, self._finish = self._finish, None
                self._source = finish()
                self._future.set_result(None)
            return True

        def is_completed(self) -> bool:
            return self._finish is None

        def is_success(self) -> bool:
            return True

        def _source_rank(self) -> int:
            self.wait()
            return self._source

        def get_future(self):
            self.wait()
            return self._future

    class RelayGroup(dist.ProcessGroup):
        """dist.send/recv (and isend/irecv, batch_isend_irecv, barrier) through the judge."""

        def __init__(self, rank: int, world: int, post, take) -> None:
            super().__init__(rank, world)
            self._post, self._take = post, take
            self._mail: dict = collections.defaultdict(collections.deque)

        def getBackendName(self) -> str:
            return BACKEND

        @property
        def group_name(self) -> str:
            # Named, so a functional collective reaches its operator (and the rank's record names it)
            # before it finds no group of that name to run on.
            return BACKEND

        def send(self, tensors, dst: int, tag: int):
            (tensor,) = tensors
            host = tensor.detach().to("cpu").contiguous()
            self._post({"relay": int(dst), "tag": int(tag)}, host.view(torch.uint8).numpy().tobytes() if host.numel() else b"")
            return Done()

        def recv(self, tensors, src: int, tag: int):
            (tensor,) = tensors
            return Done(lambda: self._fill(tensor, int(src), int(tag)))

        def recv_anysource(self, tensors, tag: int):
            (tensor,) = tensors
            return Done(lambda: self._fill(tensor, None, int(tag)))

        def barrier(self, opts=None):
            others = [r for r in range(self.size()) if r != self.rank()]
            for other in others:
                self._post({"relay": other, "tag": BARRIER_TAG}, b"")
            empty = torch.empty(0)
            for other in others:
                self._fill(empty, other, BARRIER_TAG)
            return Done()

        def _fill(self, tensor, src: int | None, tag: int) -> int:
            while True:
                found = next(((s, box) for (s, t), box in self._mail.items() if box and t == tag and src in (None, s)), None)
                if found is not None:
                    break
                header, payload = self._take()
                if header.get("op") != "relay_in":
                    raise RuntimeError("the grader's relay received something other than a message during the call")
                self._mail[(int(header["src"]), int(header["tag"]))].append(payload)
            source, box = found
            data = box.popleft()
            expected = tensor.numel() * tensor.element_size()
            if len(data) != expected:
                raise RuntimeError(f"rank {source} sent {len(data)} bytes (tag {tag}), but the tensor given to recv holds {expected}: send and recv tensors of the same size and dtype")
            if expected:
                tensor.copy_(torch.frombuffer(bytearray(data), dtype=tensor.dtype).reshape(tensor.shape))
            return source

    def refused(name: str):
        def collective(self, *args, **kwargs):
            raise LibraryCollectiveRefused(
                f"{name.strip('_')} is torch.distributed's own collective (the library's algorithm): the grader's "
                "process group carries dist.send and dist.recv (isend, irecv, batch_isend_irecv) only. Build it from those"
            )

        return collective

    for name in COLLECTIVES:
        setattr(RelayGroup, name, refused(name))
    return RelayGroup


# -- judge side ------------------------------------------------------------------------------------------
class Relay:
    """The judge's half for one exchange of ``world`` ranks: each rank's message to another handed on
    while that rank is still in its call, and what every rank sent and received, as records in the
    form of autograder.ranks.CommRecord's (``c10d::send`` / ``c10d::recv_`` and elements)."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.records: list[list] = [[] for _ in range(world)]

    def carry(self, source: int, header: dict, payload: bytes, deliver, answered) -> str | None:
        """Hand one message of ``source`` on (``deliver(rank, header, payload)``) unless its rank has
        answered (``answered(rank)``); an error message when the message names no other rank."""
        dst, tag = header.get("relay"), header.get("tag")
        if not isinstance(dst, int) or not isinstance(tag, int) or isinstance(dst, bool) or not 0 <= dst < self.world or dst == source:
            return f"rank {source} sent a message to rank {dst!r}, which is not another rank of the group of {self.world}"
        if tag == BARRIER_TAG:
            self.records[source].append(["c10d::barrier", 0])
        else:
            elements = math.ceil(len(payload) / ELEMENT_BYTES)
            self.records[source].append(["c10d::send", elements])
            if answered(dst):
                return None
            self.records[dst].append(["c10d::recv_", elements])
        if not answered(dst):
            deliver(dst, {"op": "relay_in", "src": source, "tag": tag}, payload)
        return None
