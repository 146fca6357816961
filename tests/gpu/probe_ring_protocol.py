"""Where the grader's timed run adds time to the ring and not to NCCL's all-reduce: a probe for
issue 12 on a machine with two GPUs, `python tests/gpu/probe_ring_protocol.py [OUT.json]`
(`--gloo` runs it on CPU tensors over gloo, to check the script).

In the grader (autograder.distributed_speed) the reference ring took 1.34-1.43 ms a call at 256 MiB on
two H100s and NCCL's all-reduce 0.99-1.00 ms; outside it, 30 calls back to back, the ring took 1.10 ms
with or without the grader's record of its communication (tests/gpu/probe_ring_record.py). The
grader's learner ranks are sandboxed worker processes in a network namespace of their own; its
library ranks are trusted workers. This times, with the grader's own protocol (arm, then the judge's
clock from its go to the last answer, best of three rounds), each of:

- the reference ring in learner ranks (as graded) and in trusted ranks (the library's workers running
  the ring's code);
- NCCL's all-reduce in learner ranks and in trusted ranks (as graded);

each at 10 calls a round (the grader's count) and at 40, so that a round's fixed cost (the judge's
exchange, the ranks' answers) and the time a call can be told apart: T(calls) = calls * t + F.
Expected, if the sandbox costs the ring its time: the ring slower in learner ranks than in trusted
ones; if the protocol does: F larger for the ring than for the all-reduce, t near 1.10 ms.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

NCCL_AS_LEARNER = "import torch.distributed as dist\n\n\ndef ring_all_reduce(tensor):\n    dist.all_reduce(tensor)\n    return tensor\n"


def main() -> None:
    from autograder import distributed_speed, registry, source
    from autograder.distributed_ranks import Ranks
    from autograder.netns import PrivateNetwork

    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    backend = "gloo" if "--gloo" in sys.argv else "nccl"
    out = Path(arguments[0] if arguments else os.path.join(os.environ.get("GPU_RUN_DIR", "."), "ring-protocol.json"))
    problem = registry.get("act5.ring_all_reduce")
    ring = source.extract(source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb")), problem.function)
    base = problem.speed if backend == "nccl" else replace(problem.speed, numel=1 << 16)
    device = "cuda" if backend == "nccl" else "cpu"
    rows = []
    network = PrivateNetwork()
    try:
        for code_name, code in (("reference ring", ring), ("NCCL all_reduce", NCCL_AS_LEARNER)):
            for calls in (10, 40):
                speed = replace(base, calls=calls, library_source=code + "\n\nlibrary_collective = ring_all_reduce\n")
                with tempfile.TemporaryDirectory() as workdir:
                    module = Path(workdir) / "submission.py"
                    module.write_text(code)
                    g = SimpleNamespace(
                        workdir=workdir, device=device, problem=problem, learner=None, remaining=lambda: 300.0, network=network,
                        job={"module": str(module), "entry": problem.function, "problem": problem.name},
                    )
                    for ranks_name in ("learner ranks", "trusted ranks"):
                        row = {"code": code_name, "ranks": ranks_name, "calls": calls, "backend": backend, "numel": speed.numel}
                        if ranks_name == "learner ranks":
                            ranks = Ranks(g, 0, reuse_learner=False, network=True)
                            failed = ranks.grow(speed.world_size, connect=distributed_speed._connect_request(speed, backend))
                        else:
                            ranks, failed = distributed_speed._library_ranks(g, speed, backend), None
                        try:
                            row.update(failed or distributed_speed._timed_run(g, ranks, speed, backend, check=False))
                        finally:
                            ranks.end()
                        if "seconds" in row:
                            row["ms_per_call"] = round(row["seconds"] * 1e3, 4)
                            row["rounds_ms_per_call"] = [round(r * 1e3, 4) for r in row.pop("rounds")]
                        print(json.dumps(row), flush=True)
                        rows.append(row)
    finally:
        network.close()
    fixed = {}
    for code_name in ("reference ring", "NCCL all_reduce"):
        for ranks_name in ("learner ranks", "trusted ranks"):
            by_calls = {r["calls"]: r["seconds"] for r in rows if r["code"] == code_name and r["ranks"] == ranks_name and "seconds" in r}
            if len(by_calls) == 2:
                # T(c) = c * t + F, from the best round at 10 and at 40 calls.
                t = (40 * by_calls[40] - 10 * by_calls[10]) / 30
                fixed[f"{code_name}, {ranks_name}"] = {"ms_per_call": round(t * 1e3, 4), "fixed_ms_per_round": round((10 * by_calls[10] - 10 * t) * 1e3, 3)}
    out.write_text(json.dumps({"rows": rows, "fit": fixed}, indent=1))
    print(json.dumps(fixed, indent=1))


if __name__ == "__main__":
    main()
