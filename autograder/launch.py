"""Try a distributed function from a notebook: ``autograder.launch.run_ranks(fn, world_size, inputs)``.

A notebook cannot hand its functions to ``torch.multiprocessing.spawn`` (the children import the
function by module, and a notebook is no module). So, as the grader does, the source of ``fn`` and of
everything it uses is collected from the notebook's cells (autograder.source), written to a module
in a scratch folder, and each rank is a fresh Python process that imports it, joins a gloo group on
a free port and calls ``fn(**inputs[rank])``. What each rank returns comes back to the notebook; a
rank that raises or hangs is reported by number, and no process outlives the call. This is your own
code in your own processes: nothing here is graded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

RUNNER = """
import datetime, importlib.util, sys, traceback
import torch
import torch.distributed as dist

module_path, entry, rank, world, port, inputs_path, output_path = sys.argv[1:8]
rank, world, port = int(rank), int(world), int(port)
timeout = datetime.timedelta(seconds=float(sys.argv[8]))
spec = importlib.util.spec_from_file_location("ranks_module", module_path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timeout=timeout)
dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
try:
    result = getattr(module, entry)(**torch.load(inputs_path, weights_only=False))
    torch.save({"result": result}, output_path)
except BaseException:
    torch.save({"error": traceback.format_exc()}, output_path)
    raise
dist.barrier()
dist.destroy_process_group()
"""


class RankFailed(RuntimeError):
    """A rank raised, or did not finish in time; the message names it."""


def run_ranks(fn: Callable, world_size: int, inputs: list[dict] | None = None, timeout: float = 60.0) -> list:
    """Run ``fn(**inputs[rank])`` as ``world_size`` ranks of a gloo group on this machine's CPU and
    return what each rank returned, in rank order. ``inputs`` defaults to no arguments."""
    import torch

    from . import source
    from .distributed_ranks import free_port

    inputs = inputs if inputs is not None else [{} for _ in range(world_size)]
    if len(inputs) != world_size:
        raise ValueError(f"inputs has {len(inputs)} entries, one per rank is needed ({world_size})")
    code, entry = source.for_function(fn)
    with tempfile.TemporaryDirectory(prefix="ranks-") as folder:
        module = os.path.join(folder, "ranks_module.py")
        with open(module, "w", encoding="utf-8") as f:
            f.write(code)
        runner = os.path.join(folder, "runner.py")
        with open(runner, "w", encoding="utf-8") as f:
            f.write(RUNNER)
        port = free_port()
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"}
        processes, outputs, logs = [], [], []
        for rank in range(world_size):
            path_in, path_out = os.path.join(folder, f"in{rank}.pt"), os.path.join(folder, f"out{rank}.pt")
            torch.save(inputs[rank], path_in)
            log = open(os.path.join(folder, f"rank{rank}.log"), "w+b")  # noqa: SIM115 -- closed below
            logs.append(log)
            outputs.append(path_out)
            processes.append(subprocess.Popen(
                [sys.executable, runner, module, entry, str(rank), str(world_size), str(port), path_in, path_out, str(timeout)],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            ))
        deadline = time.monotonic() + timeout + 30
        try:
            while time.monotonic() < deadline and any(p.poll() is None for p in processes):
                if any(p.returncode not in (None, 0) for p in processes):
                    # One rank failed: the others may wait for it forever; give them a moment.
                    deadline = min(deadline, time.monotonic() + 2.0)
                time.sleep(0.05)
        finally:
            for p in processes:
                if p.poll() is None:
                    p.kill()
                p.wait()
        saved = []
        for rank, path in enumerate(outputs):
            logs[rank].seek(0)
            printed = logs[rank].read().decode("utf-8", "replace")
            logs[rank].close()
            if printed.strip():
                print(f"--- rank {rank} printed ---\n{printed[-3000:]}")
            saved.append(torch.load(path, weights_only=False) if os.path.exists(path) else None)
        for rank, item in enumerate(saved):
            if item is not None and "error" in item:
                raise RankFailed(f"rank {rank} raised:\n{item['error']}")
        unfinished = [rank for rank, item in enumerate(saved) if item is None]
        if unfinished:
            raise RankFailed(
                f"rank{'s' if len(unfinished) > 1 else ''} {', '.join(map(str, unfinished))} of {world_size} did not finish "
                f"within {timeout:.0f} s: a hang (a recv with no matching send, or two ranks that both receive first?)"
            )
        return [item["result"] for item in saved]
