"""NCCL's collectives measured on this machine's GPUs, as nccl-tests reports them (algorithm and bus
bandwidth per message size), and the peer-to-peer copy bandwidth between two GPUs.

``python -m autograder.nccl_bench --out results/act5/nccl-busbw.json`` on a machine with >= 2 GPUs;
the book's Act 5 demo calls :func:`measure` the same way. Each rank is a process started with
``torch.multiprocessing`` (this module is importable, so the ranks can be spawned from a notebook).
NVLink SHARP stays off (``NCCL_NVLS_ENABLE=0``), as everywhere in the course. With ``backend="gloo"``
the same code runs on CPU tensors (the CPU tests use it; its numbers say nothing about GPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
# nccl-tests' bus-bandwidth factors (its doc/PERFORMANCE.md), S being the total size.
BUS_FACTOR = {"all_reduce": lambda p: 2 * (p - 1) / p, "all_gather": lambda p: (p - 1) / p, "reduce_scatter": lambda p: (p - 1) / p}
DEFAULT_SIZES = tuple(2**k for k in range(20, 31, 2))  # 1 MiB .. 1 GiB


def _one(collective: str, dist, full, shard):
    if collective == "all_reduce":
        dist.all_reduce(full)
    elif collective == "all_gather":
        dist.all_gather_into_tensor(full, shard)
    else:
        dist.reduce_scatter_tensor(shard, full)


def _rank(rank: int, world: int, port: int, backend: str, sizes: list, collectives: list, iters: int, out_path: str) -> None:
    import datetime

    import torch
    import torch.distributed as dist

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timeout=datetime.timedelta(seconds=300))
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    rows = []
    for collective in collectives:
        for size in sizes:
            numel = size // 4 // world * world
            full = torch.ones(numel, device=device)
            shard = torch.ones(numel // world, device=device)
            for _ in range(2):
                _one(collective, dist, full, shard)
            dist.barrier()
            if backend == "nccl":
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    _one(collective, dist, full, shard)
                end.record()
                torch.cuda.synchronize()
                seconds = start.elapsed_time(end) / 1e3 / iters
            else:
                began = time.perf_counter()
                for _ in range(iters):
                    _one(collective, dist, full, shard)
                seconds = (time.perf_counter() - began) / iters
            # The slowest rank's time is the collective's time (nccl-tests reports the same).
            slowest = torch.tensor([seconds], device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            nbytes = numel * 4
            algbw = nbytes / slowest.item()
            rows.append({"collective": collective, "bytes": nbytes, "seconds": slowest.item(), "algbw": algbw, "busbw": algbw * BUS_FACTOR[collective](world)})
    if rank == 0:
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump(rows, f)
    dist.barrier()
    dist.destroy_process_group()


def measure(world_size: int | None = None, sizes=DEFAULT_SIZES, collectives=COLLECTIVES, iters: int = 20, backend: str = "nccl") -> list[dict]:
    """Times each collective at each size over ``world_size`` ranks (all GPUs by default); one row per
    (collective, size) with seconds, algbw and busbw in bytes/s."""
    import torch
    import torch.multiprocessing as mp

    from .distributed_ranks import free_port

    if world_size is None:
        world_size = torch.cuda.device_count() if backend == "nccl" else 2
    with tempfile.TemporaryDirectory() as folder:
        out_path = os.path.join(folder, "rows.json")
        mp.start_processes(_rank, args=(world_size, free_port(), backend, list(sizes), list(collectives), iters, out_path), nprocs=world_size, start_method="spawn")
        with open(out_path, encoding="utf-8") as f:
            return json.load(f)


def p2p_bandwidth(nbytes: int = 2**30, iters: int = 10) -> dict:
    """Copy bandwidth from GPU 0 to GPU 1 (one direction), and whether the two can reach each other's
    memory directly (NVLink or PCIe peer access) rather than through the host."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda:1")
    dst.copy_(src)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        dst.copy_(src, non_blocking=True)
    end.record()
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    seconds = start.elapsed_time(end) / 1e3 / iters
    return {"bytes": nbytes, "seconds": seconds, "bytes_per_s": nbytes / seconds, "peer_access": bool(torch.cuda.can_device_access_peer(0, 1))}


def machine() -> dict:
    """The device, its count, the link between GPU 0 and 1 as nvidia-smi reports it, and versions."""
    import subprocess

    import torch

    facts = {"gpus": torch.cuda.device_count(), "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        facts["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # noqa: BLE001 -- a build without NCCL
        facts["nccl"] = None
    try:
        facts["topology"] = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        facts["topology"] = None
    return facts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args(argv)
    import torch

    gpus = torch.cuda.device_count()
    if gpus < 2:
        print(f"needs 2 GPUs: this machine has {gpus}; nothing was measured")
        return 1
    result = {"machine": machine(), "nvls": os.environ.get("NCCL_NVLS_ENABLE", "0"), "p2p": p2p_bandwidth(), "rows": {}}
    for world in sorted({2, gpus}):
        result["rows"][str(world)] = measure(world, iters=args.iters)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    for world, rows in result["rows"].items():
        for row in rows:
            print(f"{world} GPUs  {row['collective']:<15} {row['bytes'] / 2**20:>7.0f} MiB  busbw {row['busbw'] / 1e9:7.1f} GB/s")
    print(f"GPU 0 -> GPU 1 copy: {result['p2p']['bytes_per_s'] / 1e9:.1f} GB/s (peer access: {result['p2p']['peer_access']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
