"""One rank of a distributed exercise, inside a worker (autograder._worker): it joins the process
group the judge names, calls the learner's function on the inputs the judge sent, and answers with
the outputs as raw bytes and the communication it saw.

Everything here runs in the learner's process, so nothing here decides a grade: the judge
(autograder.distributed_cases) made the inputs, keeps the reference, and reads the outputs and the
record of operations as data. The record comes from a dispatch mode that sees every operation of
``torch.distributed`` (``c10d::send``, ``c10d::allreduce_``, ``_c10d_functional::all_reduce``, ...)
whatever Python path called it; the judge checks that it was still in place when the call returned.
"""

from __future__ import annotations

import datetime
import os
import pickle
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from . import flight_record, learner_code, relay, shared

# Operator namespaces of torch.distributed: everything in them is communication.
COMM_NAMESPACES = ("c10d", "_c10d_functional", "c10d_functional", "_dtensor")
POINT_TO_POINT = {"c10d::send", "c10d::recv_", "c10d::recv_any_source_"}
MAX_OUTPUT_BYTES = 1 << 31
# Elements of the messages that connect a timed run's ranks (64 MiB of float32: every channel NCCL
# gives a pair of ranks).
WARM_ELEMENTS = 16 << 20


class CommRecord(TorchDispatchMode):
    """Every torch.distributed operation of a call, in order, with the elements it moved (the sum of
    its tensor arguments' sizes). Where the judge carries the messages (autograder.relay), it counts
    and places them itself, and this record must agree with it in number."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[list] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name() if hasattr(func, "name") else str(func)
        namespace = name.split("::")[0]
        if namespace in COMM_NAMESPACES:
            elements = 0
            for arg in args:
                for item in arg if isinstance(arg, (list, tuple)) else (arg,):
                    if isinstance(item, torch.Tensor):
                        elements += item.numel()
            self.ops.append([name, elements])
        return func(*args, **(kwargs or {}))

    def still_active(self) -> bool:
        return any(mode is self for mode in _get_current_dispatch_mode_stack())


def warm() -> None:
    """A dispatch mode's first use imports much of torch (seconds): done while the worker starts,
    before the sandbox, and on every rank side by side, rather than inside the first timed case."""
    with CommRecord():
        torch.ones(2).add(1)


def join(request: dict) -> None:
    """Join the process group of one case: rank 0 hosts its store on the port the judge picked."""
    import torch.distributed as dist

    rank, world = request["rank"], request["world_size"]
    timeout = datetime.timedelta(seconds=float(request["timeout"]))
    device = None
    if request.get("backend") == "nccl":
        torch.cuda.set_device(rank)
        # Bound to its GPU, the group makes its NCCL communicator now rather than at its first use.
        device = torch.device("cuda", rank)
    store = dist.TCPStore("127.0.0.1", request["port"], world, rank == 0, timeout=timeout)
    flight_record.switch_on()
    dist.init_process_group(request.get("backend", "gloo"), store=store, rank=rank, world_size=world, timeout=timeout, device_id=device)


def leave() -> dict:
    """After every rank answered: wait for all, then close the group (rank 0's store goes with it)."""
    import torch.distributed as dist

    if dist.is_initialized():
        # The relay's group is this process's alone (autograder.relay): nothing to wait for.
        if dist.get_backend() != relay.BACKEND:
            dist.barrier()
        dist.destroy_process_group()
    return {"left": True}


def encode_outputs(raw, names: list[str]) -> tuple[list[dict], bytes]:
    """The learner's return value (one tensor, or a tuple/list/dict of them matching ``names``) as
    metadata and raw bytes: plain data, never a pickle, crosses to the judge."""
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    if isinstance(raw, dict):
        if set(raw) != set(names):
            raise TypeError(f"your function returned a dict with keys {sorted(raw)}; expected {names}")
        raw = tuple(raw[n] for n in names)
    if not isinstance(raw, (tuple, list)) or len(raw) != len(names):
        kind = type(raw).__name__
        raise TypeError(f"your function returned {kind}{'' if not isinstance(raw, (tuple, list)) else f' of {len(raw)} items'}; expected {' and '.join(names)}")
    meta, chunks, total = [], [], 0
    for name, value in zip(names, raw, strict=True):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} is a {type(value).__name__}, expected a torch.Tensor")
        if value.dtype not in shared.DTYPES.values():
            raise TypeError(f"{name} has dtype {value.dtype}, which the grader does not read")
        host = value.detach().to("cpu").contiguous()
        data = host.view(torch.uint8).numpy().tobytes() if host.numel() else b""
        total += len(data)
        if total > MAX_OUTPUT_BYTES:
            raise TypeError("your outputs are larger than the grader reads")
        meta.append({"name": name, "dtype": shared.dtype_name(host.dtype), "shape": list(host.shape), "nbytes": len(data)})
        chunks.append(data)
    return meta, b"".join(chunks)


def call(worker, request: dict, payload: bytes) -> tuple[dict, bytes]:
    """One rank's part of a correctness case: join, call the learner's function, answer. The group
    is left on the judge's ``leave`` once every rank has answered, so no rank tears it down under
    another that is still receiving."""
    import time

    started = time.monotonic()
    inputs = pickle.loads(payload)  # from the judge, the trusted side
    record = CommRecord()
    try:
        if request.get("relay"):
            relay.join(request["rank"], request["world_size"], *worker.channel_ends, request.get("collectives", ()), record.ops.append)
        else:
            join(request)
    except Exception as exc:  # noqa: BLE001 -- the grader's own failure to start the group
        return {"worker_error": f"joining the process group failed: {type(exc).__name__}: {exc}"}, b""
    joined = time.monotonic()
    active = False
    try:
        with record:
            try:
                raw = worker.fn(**inputs)
            finally:
                # Read before the mode is left: a record the learner's code took off fails to leave.
                active = record.still_active()
    except BaseException as exc:  # noqa: BLE001 -- reported as this rank's verdict
        return {"error": learner_code.error(exc, worker.setup.get("module")), "comm": record.ops[:2000], "record_active": active}, b""
    try:
        meta, data = encode_outputs(raw, request["outputs"])
    except TypeError as exc:
        return {"wrong_type": str(exc)}, b""
    seconds = [round(joined - started, 3), round(time.monotonic() - joined, 3)]
    return {"outputs": meta, "comm": record.ops[:20000], "record_active": active, "seconds": seconds}, data


# -- timed runs (NCCL on several GPUs) ---------------------------------------------------------------
def bench_input(numel: int, seed: int, rank: int) -> torch.Tensor:
    """A rank's base vector for the timed calls, on the CPU: the judge rebuilds it to check an output."""
    generator = torch.Generator().manual_seed(seed * 1009 + rank)
    return torch.randn(numel, generator=generator)


def bench_shift(rank: int, call_index: int) -> int:
    """Each timed call's input is the base vector rolled by its own amount: no call repeats another."""
    return rank + call_index * 7919


class Bench:
    """The timed calls of one rank: the process group joined and connected before the learner's code
    loads, then in each round inputs made (from the judge's seed) before the judge's go, the learner's
    function called on each in turn, the device synchronised before the answer."""

    def __init__(self) -> None:
        self.inputs: list[torch.Tensor] = []
        self.outputs: list[torch.Tensor] = []
        self.backend, self.marked, self.device = "gloo", None, torch.device("cpu")

    def connect(self, request: dict) -> dict:
        """Join the timed run's process group and make every connection its calls may use, then refuse
        new ones to every thread of the process (the worker calls this as it starts, before the
        channel's filter and before any code of the exercise loads). NCCL's traffic cannot cross the
        judge, so what a timed rank may reach is set here: the group's own communicator (whose every
        collective its flight record counts) and, for a lone send or receive, the communicator of each
        pair of ranks; a communicator of the learner's own (a second group, CuPy's NCCL bindings)
        would need new sockets for NCCL's bootstrap."""
        import torch.distributed as dist

        from . import seccomp

        # Before the join makes the store's event loop: no io_uring ring may exist when the reach
        # filter (autograder.channel) later refuses io_uring to every thread (seccomp.forbid_io_uring).
        uring = seccomp.forbid_io_uring()
        join(request)
        self.backend = request.get("backend", "gloo")
        if self.backend == "nccl":
            self.device = torch.device("cuda", request["rank"])
        rank, world = request["rank"], request["world_size"]
        # NCCL connects a pair of ranks on its first message between them (and over as many channels
        # as the message's size asks for), through its proxy's sockets: so a large message each way,
        # batched as a ring's step is (the group's communicator), then alone (the pair's own).
        sent = torch.ones(WARM_ELEMENTS, device=self.device)
        received = torch.empty_like(sent)
        peers = [peer for peer in range(world) if peer != rank]
        operations = [dist.P2POp(dist.isend, sent, peer) for peer in peers] + [dist.P2POp(dist.irecv, received, peer) for peer in peers]
        for work in dist.batch_isend_irecv(operations):
            work.wait()
        for low in range(world):
            for high in range(low + 1, world):
                if rank == low:
                    dist.send(sent, high)
                    dist.recv(received, high)
                elif rank == high:
                    dist.recv(received, low)
                    dist.send(sent, low)
        dist.barrier()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        network = seccomp.forbid_new_connections(every_thread=True)
        return {"connected": True, "network": network + (f"; io_uring: {uring}" if uring else "")}

    def arm(self, worker, request: dict) -> dict:
        import torch.distributed as dist

        device = self.device
        base = bench_input(request["numel"], request["seed"], request["rank"]).to(device)
        self.inputs = [base.roll(bench_shift(request["rank"], i)) for i in range(request["calls"] + 1)]
        del base
        # One untimed call first: NCCL connects a pair of ranks on their first message.
        warm = self.inputs.pop()
        try:
            worker.fn(warm)
        except BaseException as exc:  # noqa: BLE001
            return {"error": learner_code.error(exc, worker.setup.get("module"))}
        del warm
        self.outputs = []
        if device.type == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        self.marked = flight_record.mark(self.backend)
        return {"armed": True}

    def go(self, worker) -> dict:
        """The timed calls, each under its own record of communication: the judge checks the timed
        calls as it checked the graded ones (a function that switches to the library's collective
        on GPU tensors is caught here)."""
        records, active = [], True
        # The CPU time the calls took to issue, before the device is waited for: a diagnostic only
        # (the rank's own word), telling a rank that issues work slower than the GPUs run it.
        started = time.thread_time()
        try:
            for x in self.inputs:
                record = CommRecord()
                with record:
                    self.outputs.append(worker.fn(x))
                    active = active and record.still_active()
                records.append(record.ops[:2000])
            issued = time.thread_time() - started
            if self.inputs and self.inputs[0].is_cuda:
                torch.cuda.synchronize()
        except BaseException as exc:  # noqa: BLE001
            return {"error": learner_code.error(exc, worker.setup.get("module"))}
        return {"done": len(self.outputs), "comm": records, "record_active": active, "issue_cpu_s": issued}

    def output(self, request: dict) -> tuple[dict, bytes]:
        index = request["index"]
        if not 0 <= index < len(self.outputs):
            return {"wrong_type": "a timed call returned no output"}, b""
        try:
            meta, data = encode_outputs(self.outputs[index], ["out"])
        except TypeError as exc:
            return {"wrong_type": str(exc)}, b""
        return {"outputs": meta}, data

    def close(self) -> dict:
        """After the judge's clock stopped, the end of a round (the group stays for the next): the
        collectives the process group itself counted since the arm (autograder.flight_record: one
        hidden from the record of communication is caught there)."""
        ran = flight_record.collectives_since(self.marked, self.backend)
        self.inputs, self.outputs, self.marked = [], [], None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return {"closed": True, "collectives": ran}


def visible_gpus() -> int:
    """GPUs this process may use (the GPU run pins pytest workers with CUDA_VISIBLE_DEVICES)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0
