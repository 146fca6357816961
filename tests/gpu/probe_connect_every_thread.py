"""Which thread of a timed rank needs a new network socket after the rank is connected? A probe for
issue 12 on a machine with two GPUs: `python tests/gpu/probe_connect_every_thread.py [OUT.json]`
(`--gloo` runs it on CPU tensors over gloo, to check the script).

A timed rank joins its group and connects it (autograder.ranks.Bench.connect), then refuses a new
internet socket. Refused to the thread that runs the learner's code alone, the reference ring ran on
two H200s; refused to every thread of the rank (SECCOMP_FILTER_FLAG_TSYNC), the ranks were killed by
SIGABRT within seconds, in the untimed call, while loading, or while an output was read: a thread
other than the caller's opens one later. Each configuration starts two plain ranks (no sandbox), runs
Bench.connect as the worker does, then for RUN_S seconds a ring step (a 32 MiB batch each way) every
half second and an all-reduce every fifth step, with NCCL's warnings and PyTorch's C++ log on
stderr. Configurations: as graded; NCCL's RAS subsystem off (NCCL_RAS_ENABLE=0); PyTorch's NCCL
heartbeat monitor off (TORCH_NCCL_ENABLE_MONITORING=0); both. One JSON line per rank: steps done,
the error if one was raised, and the rank's exit status and the last lines of its stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
RUN_S = float(os.environ.get("PROBE_RUN_S", "20"))
STEP_ELEMENTS = 8 * 2**20
CONFIGS = {
    "as graded": {},
    "RAS off": {"NCCL_RAS_ENABLE": "0"},
    "heartbeat monitor off": {"TORCH_NCCL_ENABLE_MONITORING": "0"},
    "both off": {"NCCL_RAS_ENABLE": "0", "TORCH_NCCL_ENABLE_MONITORING": "0"},
}


def rank_main(rank: int, port: int, backend: str) -> None:
    import torch
    import torch.distributed as dist

    from autograder import ranks

    bench = ranks.Bench()
    said = bench.connect({"rank": rank, "world_size": 2, "port": port, "timeout": 120, "backend": backend})
    print(json.dumps({"rank": rank, "connected": said}), flush=True)
    peer, steps = 1 - rank, 0
    send = torch.full((STEP_ELEMENTS,), float(rank + 1), device=bench.device)
    receive = torch.empty_like(send)
    ended = time.monotonic() + RUN_S
    while time.monotonic() < ended:
        for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, receive, peer)]):
            request.wait()
        if steps % 5 == 4:
            dist.all_reduce(send[:1024])
        if bench.device.type == "cuda":
            torch.cuda.synchronize()
        steps += 1
        print(json.dumps({"rank": rank, "steps": steps, "t": round(time.monotonic(), 2)}), flush=True)
        time.sleep(0.5)
    print(json.dumps({"rank": rank, "done": steps}), flush=True)
    os._exit(0)


def main() -> None:
    from autograder.distributed_ranks import free_port

    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    backend = "gloo" if "--gloo" in sys.argv else "nccl"
    out = arguments[0] if arguments else os.path.join(os.environ.get("GPU_RUN_DIR", "."), "connect-every-thread.json")
    rows = []
    for name, extra in CONFIGS.items():
        environment = {**os.environ, "PYTHONPATH": ROOT, "NCCL_DEBUG": "WARN", "TORCH_CPP_LOG_LEVEL": "INFO", **extra}
        command = [sys.executable, __file__, "--port", str(free_port()), "--backend", backend]
        processes = [subprocess.Popen([*command, "--rank", str(rank)], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in range(2)]
        for rank, process in enumerate(processes):
            try:
                stdout, stderr = process.communicate(timeout=RUN_S + 90)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
            lines = stdout.strip().splitlines()
            row = {"config": name, "rank": rank, "status": process.returncode, "last": lines[-1] if lines else "", "connected": next((line for line in lines if "connected" in line), ""), "stderr": stderr[-3000:]}
            print(json.dumps(row), flush=True)
            rows.append(row)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    if "--rank" in sys.argv:
        option = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        rank_main(int(option["--rank"]), int(option["--port"]), option["--backend"])
    else:
        main()
