"""Messages between a distributed exercise's ranks, carried by the judge (Act 5's ring and DDP).

A record of communication kept in the learner's process can be edited or switched off by the code it
records (a dispatch mode can be disabled, its list appended to), and ranks that share a network can
build a process group of their own and run the library's all-reduce beside a few dummy sends. So for
a problem whose ``relay`` is set the ranks have no network and no group of the library: the process
group they join (``RelayGroup``, torch.distributed's default group) sends each message to the judge
through the worker's channel, and the judge (``Relay``) hands it to the rank it names and counts it.
An all-reduce, where the problem allows one (the DDP exercise's buckets), is computed by the judge
from every rank's part, in rank order. What a rank sent, received and all-reduced is what the judge
carried; the rank's own record must name as many all-reduces. Where the exercise's model crosses
the judge between layers (autograder.ddp_model), its ``boundary`` brings the gradient back with the
judge's addition, and the judge's order of arrival places the all-reduces. The
library's other collectives have nothing to run on: each raises ``LibraryCollectiveRefused``.

Worker side (here): ``join(rank, world, post, take, allowed, mark)``; judge side:
autograder.relay_judge.Relay inside autograder.distributed_ranks.Ranks.exchange.
"""

from __future__ import annotations

import collections
import functools

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
def join(rank: int, world: int, post, take, allowed=(), mark=None) -> None:
    """Make the relay the default process group of this rank. ``post(header, payload)`` sends to the
    judge and ``take()`` waits for the judge's next message (the worker's channel); ``allowed``: the
    collectives the judge computes itself (``allreduce``; every other one is refused); ``mark(op)``
    notes each of them in the rank's own record, where it falls among the computation."""
    import torch.distributed as dist

    group = _group_class()
    if not hasattr(dist.Backend, BACKEND.upper()):
        dist.Backend.register_backend(BACKEND, lambda store, r, w, timeout: _made(group(r, w, *_ENDS)), devices=["cpu"])
    _ENDS[:] = [post, take, frozenset(allowed), mark]
    dist.init_process_group(BACKEND, store=dist.HashStore(), rank=rank, world_size=world)


def current_group():
    """The relay group this rank's process group runs on (None outside a grading's relay), for the
    crossings of autograder.ddp_model."""
    import torch.distributed as dist

    return _MADE[0] if _MADE and dist.is_initialized() and dist.get_backend() == BACKEND else None


def _made(group):
    _MADE[:] = [group]
    return group


# The worker's two ends of its channel, the collectives allowed and the marker, for the next group;
# the last group made.
_ENDS: list = []
_MADE: list = []
REDUCTIONS = ("SUM", "AVG", "MAX", "MIN", "PRODUCT")


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

        def __init__(self, rank: int, world: int, post, take, allowed=frozenset(), mark=None) -> None:
            super().__init__(rank, world)
            self._post, self._take, self._allowed, self._mark = post, take, allowed, mark
            self._mail: dict = collections.defaultdict(collections.deque)
            self._sequence = 0

        def getBackendName(self) -> str:
            return BACKEND

        @property
        def group_name(self) -> str:
            # The name torch.distributed registered the group under: a functional collective finds
            # it there and calls this group's all-reduce (or its refusal).
            from torch.distributed.distributed_c10d import _world

            return _world.pg_names.get(self, BACKEND)

        def send(self, tensors, dst: int, tag: int):
            (tensor,) = tensors
            host = tensor.detach().to("cpu").contiguous()
            self._post({"relay": int(dst), "tag": int(tag)}, host.view(torch.uint8).numpy().tobytes() if host.numel() else b"")
            return Done()

        def recv(self, tensors, src: int, tag: int):
            (tensor,) = tensors
            return Done(lambda: self._fill(tensor, int(src), int(tag)))

        def allreduce(self, tensors, opts=None):
            if "allreduce" not in self._allowed:
                return refused_collective("allreduce")
            (tensor,) = tensors
            reduction = next((name for name in REDUCTIONS if opts is None and name == "SUM" or opts is not None and opts.reduceOp == getattr(dist.ReduceOp, name)), None)
            if reduction is None:
                raise RuntimeError("the grader's all-reduce computes SUM, AVG, MAX, MIN and PRODUCT")
            self._sequence += 1
            sequence, host = self._sequence, tensor.detach().to("cpu").contiguous()
            header = {"collective": "allreduce", "sequence": sequence, "reduce": reduction, "dtype": str(host.dtype).removeprefix("torch."), "shape": list(host.shape)}
            self._post(header, host.view(torch.uint8).numpy().tobytes() if host.numel() else b"")
            if self._mark is not None:
                self._mark(["c10d::allreduce_", tensor.numel()])
            return Done(lambda: self._result(tensor, sequence))

        def boundary(self, grad, layer: int):
            """The gradient at one of autograder.ddp_model's crossings, sent to the judge and returned
            with the judge's addition (only where the exercise's group carries crossings)."""
            if "boundary" not in self._allowed:
                return grad
            self._sequence += 1
            host = grad.detach().to("cpu", torch.float64).contiguous()
            self._post({"collective": "boundary", "sequence": self._sequence, "layer": int(layer), "shape": list(host.shape)}, host.view(torch.uint8).numpy().tobytes())
            back = torch.empty_like(host)
            self._result(back, self._sequence)
            return back.to(grad.dtype)

        def _result(self, tensor, sequence: int) -> int:
            _, data = self._await(lambda key: key == ("collective", sequence))
            if data:
                tensor.copy_(torch.frombuffer(bytearray(data), dtype=tensor.dtype).reshape(tensor.shape))
            return -1

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

        def _await(self, wanted) -> tuple:
            """The first message whose key (sender and tag, or a collective's number) is ``wanted``."""
            while True:
                key = next((key for key, box in self._mail.items() if box and wanted(key)), None)
                if key is not None:
                    return key, self._mail[key].popleft()
                header, payload = self._take()
                if header.get("op") == "relay_in":
                    self._mail[(int(header["src"]), int(header["tag"]))].append(payload)
                elif header.get("op") == "collective_in":
                    self._mail[("collective", int(header["sequence"]))].append(payload)
                else:
                    raise RuntimeError("the grader's relay received something other than a message during the call")

        def _fill(self, tensor, src: int | None, tag: int) -> int:
            (source, _), data = self._await(lambda key: key[0] != "collective" and key[1] == tag and src in (None, key[0]))
            expected = tensor.numel() * tensor.element_size()
            if len(data) != expected:
                raise RuntimeError(f"rank {source} sent {len(data)} bytes (tag {tag}), but the tensor given to recv holds {expected}: send and recv tensors of the same size and dtype")
            if expected:
                tensor.copy_(torch.frombuffer(bytearray(data), dtype=tensor.dtype).reshape(tensor.shape))
            return source

    def refused(name: str):
        def collective(self, *args, **kwargs):
            return refused_collective(name)

        return collective

    for name in COLLECTIVES:
        if name != "allreduce":
            setattr(RelayGroup, name, refused(name))
    return RelayGroup


def refused_collective(name: str):
    raise LibraryCollectiveRefused(
        f"{name.strip('_')} is torch.distributed's own collective (the library's algorithm), and this exercise's process "
        "group does not carry it: build the communication the exercise asks for from what its text names (dist.send and "
        "dist.recv for the ring)"
    )
