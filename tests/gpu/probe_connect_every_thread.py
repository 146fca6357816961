"""Which connections does NCCL make after a timed rank is connected, and in which thread? A probe for
issue 12 on a machine with two GPUs: `python tests/gpu/probe_connect_every_thread.py [OUT.json]`
(`--gloo` runs it on CPU tensors over gloo, to check the script).

A timed rank joins its group and connects it (autograder.ranks.Bench.connect: a 64 MiB batch each
way, a lone send and receive each way, a barrier), then refuses a new internet socket to the thread
that runs the learner's code. Refused to every thread of the rank instead (SECCOMP_FILTER_FLAG_TSYNC,
the twenty-third session's first version), the graded ranks were killed by SIGABRT on two H200s: in
the reference ring's untimed call (128 MiB steps), while an all-reduce's output was read, while
loading; plain ranks doing 32 MiB steps after the same connect ran 20 s without harm. Expected, if
NCCL's proxy thread connects further channels for larger messages and for the first collective (and
aborts when it cannot): with a 64 MiB warm-up and the filter on every thread, the 128 MiB steps or the
full-size all-reduce abort; warmed with the ring's own step size and a full-size all-reduce, they run;
with the filter on the calling thread alone (as graded), they run.

Measured on two H200s (results/runs/2026-11-28-h200-twenty-third-session, call 5): all three ran
their 20 steps and all-reduces and exited 0, as an earlier version did with 32 MiB steps and NCCL's
RAS or PyTorch's heartbeat monitor on or off (call 3). So plain ranks need no new socket in any
thread after the warm-up: the graded ranks' abort comes from something the sandboxed worker adds
(its network namespace, its other filters, Landlock, the channel's threads), and their printed
output (now in the speed row's `rank_output`) is what to read next.

It said (results/runs/2026-11-28-h200-twenty-fourth-session, call 1): "libuv: io_uring_enter(getevents):
Operation not permitted" on rank 0, which hosts the group's store. Its libuv loop had made an io_uring
ring when the join ran before the reach filter; the filter then refused io_uring to every thread and
libuv aborted. Plain ranks never took the reach filter. The timed ranks now refuse io_uring before
they join (seccomp.forbid_io_uring; tests/test_act5.py reproduces the abort on CPU).

Each configuration starts two plain ranks (no sandbox), joins as the grader does, warms, filters,
then for RUN_S seconds a 128 MiB ring step each way every half second and a 256 MiB all-reduce every
fifth step, with NCCL's warnings on stderr. One row per rank: its exit status, the steps it finished (none if it died) and the end
of its stderr. (Calls 3 and 5 ran it with a launcher of its own, since replaced by
two_ranks.run_pairs, which now returns each rank's status: their rows hold the rank's last printed
line where these hold its steps.)
"""

from __future__ import annotations

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
RUN_S = float(os.environ.get("PROBE_RUN_S", "10"))
STEP_ELEMENTS = 32 * 2**20
REDUCE_ELEMENTS = 64 * 2**20
# (p2p warm-up elements, a full-size all-reduce in the warm-up, the filter on every thread)
CONFIGS = {
    "64 MiB warm-up, every thread": (16 * 2**20, False, True),
    "128 MiB warm-up and a 256 MiB all-reduce, every thread": (STEP_ELEMENTS, True, True),
    "64 MiB warm-up, calling thread (as graded)": (16 * 2**20, False, False),
}


def rank_main(rank: int, port: int, backend: str, config: str, out: str) -> None:
    import torch
    import torch.distributed as dist

    from autograder import ranks, seccomp

    warm, reduce_too, every_thread = CONFIGS[config]
    ranks.join({"rank": rank, "world_size": 2, "port": port, "timeout": 120, "backend": backend})
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    small = backend != "nccl"
    peer = 1 - rank
    sent = torch.ones(1 << 12 if small else warm, device=device)
    received = torch.empty_like(sent)
    for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, sent, peer), dist.P2POp(dist.irecv, received, peer)]):
        request.wait()
    if rank == 0:
        dist.send(sent, 1)
        dist.recv(received, 1)
    else:
        dist.recv(received, 0)
        dist.send(sent, 0)
    reduced = torch.ones(1 << 12 if small else REDUCE_ELEMENTS, device=device)
    if reduce_too:
        dist.all_reduce(reduced)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize()
    said = seccomp.forbid_new_connections(every_thread)
    send = torch.full((1 << 12 if small else STEP_ELEMENTS,), float(rank + 1), device=device)
    receive = torch.empty_like(send)
    steps = 0
    ended = time.monotonic() + RUN_S
    while time.monotonic() < ended:
        for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, receive, peer)]):
            request.wait()
        if steps % 5 == 4:
            dist.all_reduce(reduced)
        if device.type == "cuda":
            torch.cuda.synchronize()
        steps += 1
        time.sleep(0.5)
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps({"config": config, "rank": rank, "filter": said, "steps": steps}) + "\n")
    os._exit(0)


def main() -> None:
    from two_ranks import run_pairs

    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    backend = "gloo" if "--gloo" in sys.argv else "nccl"
    out = arguments[0] if arguments else os.path.join(os.environ.get("GPU_RUN_DIR", "."), "connect-every-thread.json")
    lines = out + ".lines"
    environment = {**os.environ, "PYTHONPATH": ROOT, "NCCL_DEBUG": "WARN", "TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING": "false"}
    ended = run_pairs(__file__, lines, [(["--backend", backend, "--config", name], environment) for name in CONFIGS], RUN_S + 90, stderr_tail=True)
    with open(lines, encoding="utf-8") as f:
        finished = {(row["config"], row["rank"]): row for row in map(json.loads, f)}
    os.remove(lines)
    rows = []
    for rank_end in ended:
        config = rank_end["arguments"][-1]
        rows.append({"config": config, "rank": rank_end["rank"], "status": rank_end["status"], **finished.get((config, rank_end["rank"]), {"steps": None}), "stderr": rank_end["stderr"]})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    if "--rank" in sys.argv:
        option = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        rank_main(int(option["--rank"]), int(option["--port"]), option["--backend"], option["--config"], option["--out"])
    else:
        main()
