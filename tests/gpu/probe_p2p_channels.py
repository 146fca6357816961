"""How fast NCCL's send/recv moves a ring step between two GPUs, and which settings change it:
`python tests/gpu/probe_p2p_channels.py [OUT.json]` on a machine with two GPUs.

Act 5's reference ring reached 0.50x NCCL's all-reduce at 256 MiB on two H100s (target 0.7x).
Each of its steps is one batch_isend_irecv of 128 MiB each way; this times that step alone
(both directions at once, as in the ring) under NCCL's defaults and with more p2p channels or
larger chunks, whole or cut into pieces inside one batch, beside NCCL's all-reduce of 256 MiB.
One JSON object per configuration: GB/s each way, the all-reduce's bus bandwidth, and the lines
in which NCCL states its p2p channels.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RING_SOURCES = {
    "solution": os.path.join(ROOT, "solutions", "act5-multi-gpu", "ring_all_reduce.ipynb"),
    "rewritten": os.path.join(ROOT, "tests", "gpu", "ring_rewritten.py"),
}
STEP_BYTES = 128 * 2**20
CALLS = 20
CONFIGS = {
    "defaults": {"PROBE_RING": "1"},
    "NCCL_MIN_P2P_NCHANNELS=16": {"NCCL_MIN_P2P_NCHANNELS": "16"},
    "NCCL_MIN_P2P_NCHANNELS=32": {"NCCL_MIN_P2P_NCHANNELS": "32"},
    "NCCL_P2P_NVL_CHUNKSIZE=2MiB": {"NCCL_P2P_NVL_CHUNKSIZE": str(2 * 2**20)},
    "NCCL_NCHANNELS_PER_NET_PEER=8": {"NCCL_NCHANNELS_PER_NET_PEER": "8"},
}


def rank_main(rank: int, port: int, pieces_list: list[int]) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    peer = 1 - rank
    numel = STEP_BYTES // 4
    send = torch.randn(numel, device="cuda")
    receive = torch.empty_like(send)
    result = {}
    for pieces in pieces_list:
        size = numel // pieces
        ops = []
        for i in range(pieces):
            ops.append(dist.P2POp(dist.isend, send[i * size:(i + 1) * size], peer))
            ops.append(dist.P2POp(dist.irecv, receive[i * size:(i + 1) * size], peer))
        result[f"step_GBps_each_way_{pieces}_pieces"] = round(STEP_BYTES / _time(lambda ops=ops: _wait_all(dist.batch_isend_irecv(ops))) / 1e9, 1)
    if os.environ.get("PROBE_RING"):
        result.update(_ring_variants(rank, 2 * numel))
    big = torch.randn(2 * numel, device="cuda")
    seconds = _time(lambda: dist.all_reduce(big))
    result["all_reduce_busbw_GBps"] = round(2 * STEP_BYTES / seconds / 1e9, 1)
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def _wait_all(requests) -> None:
    for request in requests:
        request.wait()


def _ring_variants(rank: int, numel: int) -> dict:
    """The reference ring as the grader times it (a fresh input each call, the grader's record of
    communication on), with the record off, and as rewritten; milliseconds per call on the GPU and
    the CPU's own time to issue a call."""
    import time

    import torch

    sys.path.insert(0, ROOT)
    from autograder import source
    from autograder.ranks import CommRecord, bench_input, bench_shift

    variants = {}
    for label, path in RING_SOURCES.items():
        namespace = {}
        code = source.extract(source.notebook_cells(path), "ring_all_reduce") if path.endswith(".ipynb") else open(path).read()
        exec(compile(code, path, "exec"), namespace)
        variants[label] = namespace["ring_all_reduce"]
    base = bench_input(numel, 1, rank).cuda()
    inputs = [base.roll(bench_shift(rank, i)) for i in range(CALLS)]
    result = {}
    for label, function in variants.items():
        for recorded in (False, True):
            for x in inputs[:2]:
                function(x.clone())
            copies = [x.clone() for x in inputs]
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            issued = time.perf_counter()
            for x in copies:
                if recorded:
                    with CommRecord():
                        function(x)
                else:
                    function(x)
            issued = time.perf_counter() - issued
            end.record()
            torch.cuda.synchronize()
            key = f"ring_{label}{'_recorded' if recorded else ''}"
            result[key + "_ms"] = round(start.elapsed_time(end) / CALLS, 3)
            result[key + "_cpu_ms"] = round(issued * 1e3 / CALLS, 3)
    return result


def _time(call) -> float:
    import torch

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(3):
        start.record()
        for _ in range(CALLS):
            call()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / CALLS)
    return best


def run_config(name: str, env: dict) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    full = {**os.environ, "NCCL_NVLS_ENABLE": "0", "NCCL_DEBUG": "INFO", **env}
    procs = [
        subprocess.Popen([sys.executable, __file__, "--rank", str(r), str(port)], env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for r in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    row = {"config": name, "env": env, "exit_codes": [p.returncode for p in procs]}
    for line in outputs[0].splitlines():
        if line.startswith("RESULT "):
            row.update(json.loads(line[7:]))
    row["nccl_channels"] = sorted({line.split("NCCL INFO ", 1)[1] for line in outputs[0].splitlines() if "NCCL INFO" in line and "p2p channels" in line})
    row["nccl_version"] = sorted({line.split("NCCL INFO ", 1)[1] for line in outputs[0].splitlines() if "NCCL INFO NCCL version" in line})
    if not row.get("all_reduce_busbw_GBps"):
        row["tail"] = outputs[0].splitlines()[-15:]
    return row


def main() -> None:
    rows = []
    for name, env in CONFIGS.items():
        row = run_config(name, env)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        rank_main(int(sys.argv[2]), int(sys.argv[3]), [1, 4, 16])
    else:
        main()
