"""Can the ring's timed ranks lose the network once armed, and does that leave a collective nothing
to run on? A probe for issue 12, on a machine with two GPUs:
`python tests/gpu/probe_nccl_sockets_after_arm.py [OUT.json]` (`--gloo` runs the same protocol on
CPU tensors over gloo, to check the script; gloo connects every pair when the group is made, so there
a collective needs no new socket and the filter changes nothing).

The ring's timed ranks keep their record of communication in their own process (NCCL's traffic cannot
cross the judge), where a collective can be hidden from it. NCCL makes a communicator lazily: the
point-to-point pairs at their first send and receive, the group's collective communicator at its
first collective, and making one opens sockets (NCCL's bootstrap; the proxy's connections). So if a
timed rank is armed without any collective (the grader's arm ends with `dist.barrier()`, which on
NCCL is an all-reduce) and then may open no socket, the ring's sends and receives should run on the
pairs already made while a collective has no communicator and cannot make one. Each configuration
starts two ranks, makes the group without `device_id` (lazy), runs one ring step (a 128 MiB
`batch_isend_irecv` each way), then:

- "barrier, then no sockets": `dist.barrier()`, then the filter (socket and connect refused, every
  thread: autograder.seccomp's network rule alone);
- "no barrier, then no sockets": the filter at once;
- "no filter": neither, as a baseline.

Then, in each: 20 more ring steps, timed by CUDA events (GB/s each way) and checked; then a 1 MiB
`dist.all_reduce` with its outcome (its sum, or the error's text) or "hung" if it did not finish in
60 s. Expected: the ring steps run in all three at about the same speed; the all-reduce succeeds in
"no filter" and "barrier, then no sockets" (the communicator exists) and fails in "no barrier, then
no sockets". One JSON line per configuration and rank.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
CONFIGS = ("no filter", "barrier, then no sockets", "no barrier, then no sockets")
STEP_ELEMENTS = 32 * 2**20  # 128 MiB of float32 each way
STEPS = 20
ALL_REDUCE_S = 60.0


def no_sockets() -> str:
    """Refuse socket and connect on every thread of this process from now on."""
    from autograder import seccomp

    refuse, allow = seccomp._op(seccomp._RET, seccomp.RET_ERRNO | errno.EPERM), seccomp._op(seccomp._RET, seccomp.RET_ALLOW)
    code = seccomp._header()
    for number in sorted(seccomp.NETWORK.values()):
        code += [seccomp._op(seccomp._JEQ, number, jf=1), refuse]
    code.append(allow)
    return seccomp._install(b"".join(code), every_thread=True) or "installed"


def ring_step(dist, send, receive, peer):
    for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, receive, peer)]):
        request.wait()


def rank_main(rank: int, config: str, port: int, backend: str, out: str) -> None:
    import threading

    import torch
    import torch.distributed as dist

    row = {"config": config, "rank": rank, "backend": backend}
    try:
        device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(rank)
        store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=datetime.timedelta(seconds=120))
        dist.init_process_group(backend, store=store, rank=rank, world_size=2, timeout=datetime.timedelta(seconds=120))
        peer = 1 - rank
        elements = STEP_ELEMENTS if backend == "nccl" else 1 << 16
        send = torch.full((elements,), float(rank + 1), device=device)
        receive = torch.empty_like(send)
        ring_step(dist, send, receive, peer)
        if "barrier, then" in config:
            dist.barrier()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if "no sockets" in config:
            row["filter"] = no_sockets()
        started = time.perf_counter()
        if device.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
        for _ in range(STEPS):
            ring_step(dist, send, receive, peer)
        if device.type == "cuda":
            end.record()
            torch.cuda.synchronize()
            seconds = begin.elapsed_time(end) / 1e3
        else:
            seconds = time.perf_counter() - started
        row["ring_right"] = bool((receive == float(peer + 1)).all())
        row["ring_gb_per_s_each_way"] = round(STEPS * elements * 4 / seconds / 1e9, 1)
        outcome: dict = {}

        def reduce():
            try:
                tensor = torch.full((1 << 18,), float(rank + 1), device=device)
                dist.all_reduce(tensor)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                outcome["sum"] = float(tensor[0])
            except Exception as exc:  # noqa: BLE001 -- the outcome is what the probe reports
                outcome["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"

        worker = threading.Thread(target=reduce, daemon=True)
        worker.start()
        worker.join(ALL_REDUCE_S)
        row["all_reduce"] = outcome or "hung"
    except Exception as exc:  # noqa: BLE001
        row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    # A hung all-reduce holds NCCL's threads: leave without tearing the group down.
    os._exit(0)


def main() -> None:
    from two_ranks import run_pairs

    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    backend = "gloo" if "--gloo" in sys.argv else "nccl"
    out = arguments[0] if arguments else os.path.join(os.environ.get("GPU_RUN_DIR", "."), "nccl-sockets-after-arm.json")
    environment = {**os.environ, "NCCL_NVLS_ENABLE": "0", "PYTHONPATH": ROOT}
    run_pairs(__file__, out, [(["--config", config, "--backend", backend], environment) for config in CONFIGS], ALL_REDUCE_S + 120)


if __name__ == "__main__":
    if "--rank" in sys.argv:
        option = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        rank_main(int(option["--rank"]), option["--config"], int(option["--port"]), option["--backend"], option["--out"])
    else:
        main()
