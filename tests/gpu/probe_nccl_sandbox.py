"""Which parts of a grading worker's sandbox NCCL survives, on a machine with two GPUs:
`python tests/gpu/probe_nccl_sandbox.py [OUT.json]`.

Each configuration starts two rank processes that confine themselves as a grading worker does
(autograder.osguard: every capability dropped, Landlock with the writable paths of a distributed
exercise; in the last configuration autograder.seccomp's filters too), each in a Landlock domain of its own, then join an NCCL group and time a 256 MiB
all-reduce and a send/recv. One JSON line per configuration: the exit codes, the bus bandwidth, the transports NCCL
chose and its warnings. Act 5's ring failed in the grader on two H100s ("ncclProxyClientGetFd" with
NCCL's defaults; SIGABRT with NCCL_CUMEM_ENABLE=0); this finds the settings that work.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMEL = 64 * 2**20  # 256 MiB of float32
CALLS = 20
CONFIGS = {
    "no sandbox": ("none", {}),
    "sandbox": ("both", {}),
    "sandbox, cuMem off": ("both", {"NCCL_CUMEM_ENABLE": "0"}),
    "sandbox, abstract sockets allowed": ("both-sockets", {}),
    "sandbox, abstract sockets allowed, cuMem off": ("both-sockets", {"NCCL_CUMEM_ENABLE": "0"}),
    "sandbox, abstract sockets allowed, system call filters": ("both-sockets-filter", {}),
    # As the grader runs Act 5's ranks: in a network namespace of their own (autograder.netns).
    "sandbox, abstract sockets allowed, system call filters, a network of their own": ("both-sockets-filter-net", {}),
}
# With PROBE_P2P=1: no sandbox, and the ways of calling send/recv (they aborted with an illegal
# memory access after an all-reduce, sandbox or not, on two H100s with NCCL 2.28.9).
P2P_CONFIGS = {
    "isend/recv after all-reduce": ("none", {"PROBE_P2P_MODE": "isend"}),
    "batch_isend_irecv after all-reduce": ("none", {"PROBE_P2P_MODE": "batch"}),
    "isend/recv, group made with device_id": ("none", {"PROBE_P2P_MODE": "isend", "PROBE_DEVICE_ID": "1"}),
    "isend/recv, no all-reduce first": ("none", {"PROBE_P2P_MODE": "isend", "PROBE_SKIP_ALL_REDUCE": "1"}),
}


def rank_main(rank: int, port: int, guard: str, folder: str) -> None:
    sys.path.insert(0, ROOT)
    import torch

    from autograder import osguard
    from autograder.distributed_ranks import device_files

    torch.cuda.set_device(rank)
    torch.cuda.init()
    facts = {}
    if guard.startswith(("both", "capabilities")):
        facts["capabilities"] = osguard.drop_capabilities()
    if guard.startswith(("both", "landlock")):
        facts["sandbox"] = osguard.confine([folder, *device_files("cuda")], abstract_sockets="sockets" in guard)
    if "filter" in guard:
        # The worker's system call filters as a distributed rank has them (descriptor passing and the
        # network left to NCCL), with no channel of its own to keep.
        from autograder import seccomp

        facts["filter"] = seccomp.forbid_channel((), passing=True, protected=(os.getppid(),))
    import datetime

    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=datetime.timedelta(seconds=60))
    device_id = torch.device("cuda", rank) if os.environ.get("PROBE_DEVICE_ID") else None
    dist.init_process_group("nccl", store=store, rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60), device_id=device_id)
    x = torch.randn(NUMEL, device="cuda")
    seconds = float("nan")
    if not os.environ.get("PROBE_SKIP_ALL_REDUCE"):
        dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        started = time.perf_counter()
        for _ in range(CALLS):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - started) / CALLS
    # Point-to-point, as a ring built from send/recv uses NCCL: a second communicator's channels.
    half = x[: NUMEL // 2].clone()
    received = torch.empty_like(half)
    # One batch by default, as the reference ring sends (an isend then a recv after an all-reduce
    # aborts with or without a sandbox: PROBE_P2P=1's first row).
    if os.environ.get("PROBE_P2P_MODE", "batch") == "batch":
        for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, half, 1 - rank), dist.P2POp(dist.irecv, received, 1 - rank)]):
            request.wait()
    else:
        request = dist.isend(half, 1 - rank)
        dist.recv(received, 1 - rank)
        request.wait()
    torch.cuda.synchronize()
    facts["p2p_ok"] = bool(torch.isfinite(received).all().item())
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps({**facts, "busbw_GBps": round(4 * NUMEL / seconds / 1e9, 1)}), flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name: str, guard: str, extra: dict) -> dict:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
    env.update(NCCL_DEBUG="INFO", NCCL_NVLS_ENABLE="0", **extra)
    procs = []
    sys.path.insert(0, ROOT)
    from autograder.netns import PrivateNetwork, launch

    network = PrivateNetwork() if guard.endswith("-net") else None
    env.update(network.env() if network else {})
    with tempfile.TemporaryDirectory() as folder:
        env["TMPDIR"] = folder
        for rank in range(2):
            procs.append(subprocess.Popen(launch([sys.executable, __file__, "--rank", str(rank), str(port), guard, folder], env), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outputs, codes = [], []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            outputs.append(out)
            codes.append(p.returncode)
    if network:
        network.close()
    row = {"config": name, "env": extra, "exit_codes": codes, **({"network": network.fact} if network else {})}
    for line in outputs[0].splitlines():
        if line.startswith("RESULT "):
            row.update(json.loads(line[7:]))
    keep = ("WARN", "rror", "illegal", "Abort", "abort", "terminate", "Traceback", "ncclProxy")
    row["nccl"] = [line[-220:] for out in outputs for line in out.splitlines() if any(k in line for k in keep)][:40]
    row["tail"] = [out.splitlines()[-6:] for out in outputs]
    return row


def main() -> int:
    rows = []
    for name, (guard, extra) in (P2P_CONFIGS if os.environ.get("PROBE_P2P") else CONFIGS).items():
        started = time.perf_counter()
        row = run(name, guard, extra)
        row["seconds"] = round(time.perf_counter() - started, 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        sys.exit(main())
