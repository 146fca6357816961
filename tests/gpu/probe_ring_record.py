"""What the ring's timed ranks pay for their record of communication, and what NCCL's own flight
recorder sees instead: a probe for issue 12 on a machine with two GPUs,
`python tests/gpu/probe_ring_record.py [OUT.json]` (`--gloo` runs it on CPU tensors over gloo, to
check the script: gloo's flight recorder keeps collectives only, not sends and receives).

The reference ring (solutions/act5-multi-gpu/ring_all_reduce.ipynb) reaches 0.70-0.75x NCCL's
all-reduce at 256 MiB on two H100s under the grader, where each timed call runs inside the grader's
record (autograder.ranks.CommRecord, a dispatch mode that sees every operation); its timed ranks are
bound by their CPU. This probe times the same ring, in the same process group, 30 calls a row:

- "plain": no record;
- "record": each call under CommRecord, as the grader times it today;
- "pass-through": each call under a dispatch mode that does nothing but call the operation (what
  any dispatch mode costs);

reporting each row's wall time a call (calls queued back to back, one synchronisation at the end)
and the main thread's CPU time a call. Then, with NCCL's flight recorder on
(TORCH_NCCL_TRACE_BUFFER_SIZE, read before the group is made), which the process group fills in C++
for every operation it runs, whatever Python path called it: the entries one ring call adds (their
names, sizes and sequence numbers), and the entries and sequence numbers that three hidden
all-reduces add: one under the record with the dispatch modes switched off
(`_disable_current_modes`), one through the process group's own method, one through the functional
collective. Expected: "record" costs most of the gap between the ring and NCCL, "plain" and
"pass-through" do not; the flight recorder's collective sequence number counts every hidden
all-reduce, and the record misses the first. Last, on GPUs, a collective torch never sees (CuPy's
NCCL bindings on a communicator of their own, made through the group's store): whether the flight
record shows it (expected: no), and the kernel names the profiler gives a ring call, torch's
all-reduce and CuPy's, which a rule on the timed calls' kernels would judge. One JSON line per rank
and configuration.
"""

from __future__ import annotations

import datetime
import json
import os
import pickle
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
NOTEBOOK = os.path.join(ROOT, "solutions", "act5-multi-gpu", "ring_all_reduce.ipynb")
CALLS = 30
TRACE_ENV = ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE")


def ring_function():
    """The reference solution's ring_all_reduce, from its notebook cell."""
    with open(NOTEBOOK, encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    source = next("".join(c["source"]) for c in cells if "def ring_all_reduce" in "".join(c["source"]))
    namespace: dict = {}
    exec(compile(source, NOTEBOOK, "exec"), namespace)  # noqa: S102 -- the course's own solution
    return namespace["ring_all_reduce"]


def dump_trace() -> dict:
    """The flight recorder's dump, from whichever name this torch gives it."""
    import torch._C._distributed_c10d as c10d

    for name in ("_dump_nccl_trace", "_dump_fr_trace"):
        if hasattr(c10d, name):
            return pickle.loads(getattr(c10d, name)())
    return {}


def entry_view(entry: dict) -> dict:
    keys = ("record_id", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name", "input_sizes", "is_p2p", "state")
    return {k: entry[k] for k in keys if k in entry}


def timed_row(dist, torch, ring, inputs, mode_factory) -> dict:
    torch.cuda.synchronize() if inputs[0].is_cuda else None
    dist.barrier()
    cpu_started, started = time.thread_time(), time.perf_counter()
    for x in inputs:
        if mode_factory is None:
            ring(x)
        else:
            with mode_factory():
                ring(x)
    cpu = time.thread_time() - cpu_started
    if inputs[0].is_cuda:
        torch.cuda.synchronize()
    wall = time.perf_counter() - started
    return {"wall_ms_per_call": round(wall / len(inputs) * 1e3, 4), "cpu_ms_per_call": round(cpu / len(inputs) * 1e3, 4)}


def outside_torch(dist, torch, ring, base, rank: int) -> dict:
    """A collective torch never sees: CuPy's NCCL bindings on a communicator of their own, its id
    passed through the group's store. Reports whether the flight record shows it, and the kernels the
    profiler sees for a ring call, torch's all-reduce and CuPy's (the names a kernel-level rule would
    judge)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    found: dict = {}
    try:
        from cupy.cuda import nccl

        store = dist.distributed_c10d._get_default_store()
        if rank == 0:
            store.set("probe_nccl_id", ",".join(str(v) for v in nccl.get_unique_id()))
        unique_id = tuple(int(v) for v in store.get("probe_nccl_id").decode().split(","))
        communicator = nccl.NcclCommunicator(2, unique_id, rank)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    before = dump_trace().get("entries", [])
    x = torch.ones(1 << 20, device=base.device)
    stream = torch.cuda.current_stream().cuda_stream
    kernels = {}
    for name, run in (
        ("ring", lambda: ring(base.clone())),
        ("torch all_reduce", lambda: dist.all_reduce(x)),
        ("cupy nccl allReduce", lambda: communicator.allReduce(x.data_ptr(), x.data_ptr(), x.numel(), nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream)),
    ):
        with profile(activities=[ProfilerActivity.CUDA]) as profiled:
            run()
            torch.cuda.synchronize()
        kernels[name] = sorted({e.name for e in profiled.events() if e.device_type == DeviceType.CUDA})
    after = dump_trace().get("entries", [])
    found["kernels"] = kernels
    found["flight_record_after_cupy"] = [entry_view(e) for e in after[len(before):]]
    # Ones, summed over two ranks by torch (2), then by CuPy (4).
    found["cupy_sum_right"] = bool((x == 4.0).all())
    return found


def rank_main(rank: int, port: int, backend: str, out: str, trace: bool) -> None:
    import torch
    import torch.distributed as dist
    from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

    from autograder.ranks import CommRecord

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    row: dict = {"rank": rank, "backend": backend, "flight_recorder": trace}
    try:
        device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(rank)
        store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=datetime.timedelta(seconds=120))
        dist.init_process_group(backend, store=store, rank=rank, world_size=2, timeout=datetime.timedelta(seconds=120))
        ring = ring_function()
        numel = 64 * 2**20 if backend == "nccl" else 1 << 12
        base = torch.randn(numel, device=device)
        with CommRecord():
            torch.ones(2).add(1)
        ring(base.clone())
        rows = {}
        for name, factory in (("plain", None), ("record", CommRecord), ("pass-through", PassThrough), ("plain again", None), ("record again", CommRecord)):
            inputs = [base.roll(i + 1) for i in range(CALLS)]
            rows[name] = timed_row(dist, torch, ring, inputs, factory)
            del inputs
        row["timed"] = rows
        if trace:
            import torch.distributed._functional_collectives as functional

            before = dump_trace().get("entries", [])
            ring(base.clone())
            after_ring = dump_trace().get("entries", [])
            row["one_ring_call_adds"] = [entry_view(e) for e in after_ring[len(before):]]
            hidden = {}
            x = torch.ones(1024, device=device)
            record = CommRecord()
            with record:
                with _disable_current_modes():
                    dist.all_reduce(x)
            hidden["modes_off"] = {"record_ops": record.ops}
            record = CommRecord()
            with record:
                dist.group.WORLD.allreduce([x]).wait()
            hidden["group_method"] = {"record_ops": record.ops}
            record = CommRecord()
            with record:
                functional.all_reduce(x, "sum", dist.group.WORLD).wait()
            hidden["functional"] = {"record_ops": record.ops}
            if device.type == "cuda":
                torch.cuda.synchronize()
            final = dump_trace()
            row["hidden"] = hidden
            row["hidden_entries"] = [entry_view(e) for e in final.get("entries", [])[len(after_ring):]]
            row["pg_status"] = final.get("pg_status")
            import torch._C._distributed_c10d as c10d

            row["c10d_names"] = sorted(n for n in dir(c10d) if any(w in n.lower() for w in ("trace", "fr_", "flight", "reset", "comm_ptr")))
            if device.type == "cuda":
                row["outside_torch"] = outside_torch(dist, torch, ring, base, rank)
    except Exception as exc:  # noqa: BLE001 -- the probe reports what happened
        row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, default=str) + "\n")
    os._exit(0)


def main() -> None:
    from two_ranks import run_pairs

    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    backend = "gloo" if "--gloo" in sys.argv else "nccl"
    out = arguments[0] if arguments else os.path.join(os.environ.get("GPU_RUN_DIR", "."), "ring-record.json")
    configurations = []
    for trace in (False, True):
        environment = {**os.environ, "NCCL_NVLS_ENABLE": "0", "PYTHONPATH": ROOT}
        for name in TRACE_ENV:
            environment.pop(name, None)
            if trace:
                environment[name] = "2000"
        configurations.append((["--backend", backend, "--trace", str(int(trace))], environment))
    run_pairs(__file__, out, configurations, 180)


if __name__ == "__main__":
    if "--rank" in sys.argv:
        option = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        rank_main(int(option["--rank"]), int(option["--port"]), option["--backend"], option["--out"], option["--trace"] == "1")
    else:
        main()
