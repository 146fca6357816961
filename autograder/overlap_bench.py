"""Act 5's reference solutions timed on several GPUs (issue 22): the data-parallel step of Exercise 5.3
with its buckets overlapping the backward pass against the same step with one bucket (all-reduced
after the backward pass: nothing overlapped), and the tensor-parallel MLP of Exercise 5.4.

``python -m autograder.overlap_bench --out results/act5/overlap.json`` on >= 2 GPUs (NCCL, NVLink
SHARP off). The functions are read from the solution notebooks, as a learner's are, written to a
module in a scratch folder and run by ranks started with ``torch.multiprocessing``; each step is
timed with CUDA events on every rank and the slowest rank's median is kept. With ``backend="gloo"``
the same code runs on CPU tensors at toy sizes (the CPU tests use it; its times mean nothing).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = {"ddp_step": "solutions/act5-multi-gpu/ddp_buckets.ipynb", "tp_mlp": "solutions/act5-multi-gpu/tp_mlp.ipynb"}


def solution_module(folder: str) -> str:
    """A module holding the two reference functions, collected from their notebooks."""
    from . import source

    parts = []
    for entry, notebook in NOTEBOOKS.items():
        parts.append(source.extract(source.notebook_cells(str(ROOT / notebook)), entry))
    path = os.path.join(folder, "act5_solutions.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join(parts))
    return path


def _timed(fn, device, warmup: int, iters: int) -> float:
    import torch

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            began = time.perf_counter()
            fn()
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def _rank(rank: int, world: int, port: int, backend: str, module_path: str, sizes: dict, out_path: str) -> None:
    import datetime

    import torch
    import torch.distributed as dist

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timeout=datetime.timedelta(seconds=300))
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    spec = importlib.util.spec_from_file_location("act5_solutions", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generator = torch.Generator().manual_seed(rank)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=generator) * scale).to(device)

    width, batch, iters = sizes["ddp_width"], sizes["ddp_batch"], sizes["iters"]
    dims = [width, width, width, width]
    torch.manual_seed(0)
    params = [t.to(device) for i in range(3) for t in (torch.randn(dims[i], dims[i + 1]) / dims[i] ** 0.5, torch.randn(dims[i + 1]) * 0.1)]
    x, y = randn(batch, width), randn(batch, width)
    total = sum(p.numel() for p in params)
    rows = {}
    for label, cap in (("one bucket after the backward pass", total), ("buckets overlapping the backward pass", sizes["bucket_elements"])):
        rows[label] = _timed(lambda cap=cap: module.ddp_step(params, x, y, cap), device, 3, iters)
    tokens, hidden, per_rank = sizes["tp_tokens"], sizes["tp_hidden"], sizes["tp_ffn"] // world
    tp_args = {"x": randn(tokens, hidden), "w1": randn(hidden, per_rank, scale=hidden**-0.5), "b1": randn(per_rank),
               "w2": randn(per_rank, hidden, scale=per_rank**-0.5), "b2": randn(hidden), "grad_out": randn(tokens, hidden)}
    rows["tensor-parallel MLP step"] = _timed(lambda: module.tp_mlp(**tp_args), device, 3, iters)
    slowest = {}
    for label, seconds in rows.items():
        value = torch.tensor([seconds], device=device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        slowest[label] = value.item()
    if rank == 0:
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump({"seconds": slowest, "parameters": total, "sizes": sizes, "world_size": world, "backend": backend}, f)
    dist.barrier()
    dist.destroy_process_group()


# fp32 throughout (TF32 off, as PyTorch defaults): a batch of 512 makes the backward pass last about as
# long as the all-reduce of its 805 MB of gradients over NVLink, where overlap matters most.
GPU_SIZES = {"ddp_width": 8192, "ddp_batch": 512, "bucket_elements": 25 * 2**20 // 4, "tp_tokens": 4096, "tp_hidden": 8192, "tp_ffn": 4 * 8192, "iters": 10}


def measure(world_size: int, sizes: dict = GPU_SIZES, backend: str = "nccl") -> dict:
    import torch.multiprocessing as mp

    from .distributed_ranks import free_port

    with tempfile.TemporaryDirectory() as folder:
        module_path = solution_module(folder)
        out_path = os.path.join(folder, "times.json")
        mp.start_processes(_rank, args=(world_size, free_port(), backend, module_path, dict(sizes), out_path), nprocs=world_size, start_method="spawn")
        with open(out_path, encoding="utf-8") as f:
            result = json.load(f)
    seconds = result["seconds"]
    result["overlap_speedup"] = seconds["one bucket after the backward pass"] / seconds["buckets overlapping the backward pass"]
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import torch

    gpus = torch.cuda.device_count()
    if gpus < 2:
        print(f"needs 2 GPUs: this machine has {gpus}; nothing was measured")
        return 1
    from .nccl_bench import machine

    result = {"machine": machine(), "runs": {str(w): measure(w) for w in sorted({2, gpus})}}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    for world, run in result["runs"].items():
        for label, seconds in run["seconds"].items():
            print(f"{world} GPUs  {label:<40} {seconds * 1e3:8.2f} ms")
        print(f"{world} GPUs  overlap speed-up {run['overlap_speedup']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
