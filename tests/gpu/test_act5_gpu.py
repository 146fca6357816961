"""Act 5 on a machine with two or more GPUs (issue 22): the reference ring all-reduce against NCCL's
all-reduce, graded as a learner's would be; NCCL's collectives measured as nccl-tests reports them.
Every measurement is written under $GPU_OUT/results/act5/ before anything is asserted, so a missed
target still leaves its numbers. tests/gpu/run.sh runs this file without pinning its worker to one
GPU (the "multigpu" step; `make test-gpu-multi`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from autograder import grading, nccl_bench, registry, source

ROOT = Path(__file__).resolve().parent.parent.parent
GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu, pytest.mark.skipif(GPUS < 2, reason=f"needs 2 GPUs (this machine has {GPUS})")]


def _out(name: str) -> Path:
    folder = Path(os.environ.get("GPU_OUT") or ROOT / "_build" / "gpu-out") / "results" / "act5"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def test_reference_ring_against_nccl():
    problem = registry.get("act5.ring_all_reduce")
    cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
    code = source.extract(cells, problem.function)
    result = grading.grade_source(problem, code, problem.function, device="cuda")
    kept = {k: result.get(k) for k in ("status", "message", "points", "speed_note", "distributed_speed", "cases", "stage_seconds", "network")}
    kept["device"] = torch.cuda.get_device_name(0)
    kept["gpus"] = GPUS
    _out("ring-vs-nccl.json").write_text(json.dumps(kept, indent=1, default=str))
    assert result["status"] == "PASS", (result["message"], result.get("cases"))
    # NCCL's ranks met over a network namespace's own loopback (autograder.netns), as every grading's do.
    assert result.get("network") == "the ranks in a network of their own (its loopback device only)", result.get("network")
    speed = result.get("distributed_speed") or {}
    assert "ratio" in speed, speed
    assert speed["ratio"] >= problem.speed.solution_target, (
        f"the reference ring reached {speed['ratio']:.2f}x NCCL's bus bandwidth, target {problem.speed.solution_target:.2f}x: {result['speed_note']}"
    )
    assert result["points"] == problem.max_points


def _ring_with(before: str = "", replace: tuple[str, str] | None = None) -> str:
    """The reference ring, with ``before`` run on NCCL at the start of each call and one text replaced."""
    problem = registry.get("act5.ring_all_reduce")
    cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
    code = source.extract(cells, problem.function)
    if before:
        code = code.replace("    rank, world = dist.get_rank(), dist.get_world_size()\n", "    if dist.get_backend() == 'nccl':\n" + before + "    rank, world = dist.get_rank(), dist.get_world_size()\n", 1)
    if replace:
        assert replace[0] in code
        code = code.replace(*replace)
    return code


def _graded(name: str, code: str) -> dict:
    problem = registry.get("act5.ring_all_reduce")
    result = grading.grade_source(problem, code, problem.function, device="cuda")
    _out(f"{name}.json").write_text(json.dumps({k: result.get(k) for k in ("status", "message", "points", "speed_note", "distributed_speed")}, indent=1, default=str))
    return result


def test_a_collective_hidden_in_the_timed_run_is_rejected():
    """The reference ring plus one NCCL all-reduce in each timed call, out of sight of the rank's own
    record: NCCL's flight record counts it, and the grading is rejected (autograder.flight_record), or
    the collective needs a connection the group has not made, which is refused: no ratio either way."""
    hidden = "        with _disable_current_modes():\n            dist.all_reduce(torch.ones(1024, device=tensor.device))\n"
    result = _graded("hidden-collective-modes-switched-off", "from torch.utils._python_dispatch import _disable_current_modes\n" + _ring_with(hidden))
    speed = result.get("distributed_speed") or {}
    rejected = result["status"] == "REJECT" and "the process group's own record of rank" in result["message"]
    refused = "ratio" not in speed and "may open no new connection" in speed.get("note", "")
    assert rejected or refused, (result["status"], result["message"], speed)


# Communicators the timed ranks may not make (autograder.ranks.Bench.connect: no new connection once
# the group is connected): a second torch.distributed group, and CuPy's NCCL bindings with the unique id
# passed through the group's own store.
OWN_COMMUNICATOR = {
    "a group of its own": "        with _disable_current_modes():\n            dist.all_reduce(torch.ones(1024, device=tensor.device), group=dist.new_group([0, 1]))\n",
    "cupy nccl": "        _cupy_all_reduce(tensor)\n",
}
CUPY_ALL_REDUCE = """
_COMMUNICATOR = []


def _cupy_all_reduce(tensor):
    from cupy.cuda import nccl

    if not _COMMUNICATOR:
        store = dist.distributed_c10d._get_default_store()
        # Asked for on every rank (rank 0's is used): one refused on rank 0 alone would leave the
        # other waiting on the store until the untimed call's limit.
        unique_id = nccl.get_unique_id()
        if dist.get_rank() == 0:
            store.set("own_nccl", ",".join(str(v) for v in unique_id))
        unique_id = tuple(int(v) for v in store.get("own_nccl").decode().split(","))
        _COMMUNICATOR.append(nccl.NcclCommunicator(dist.get_world_size(), unique_id, dist.get_rank()))
    x = torch.ones(1024, device=tensor.device)
    _COMMUNICATOR[0].allReduce(x.data_ptr(), x.data_ptr(), x.numel(), nccl.NCCL_FLOAT32, nccl.NCCL_SUM, torch.cuda.current_stream().cuda_stream)
"""


@pytest.mark.parametrize("how", sorted(OWN_COMMUNICATOR))
def test_a_communicator_of_its_own_cannot_be_made_in_the_timed_run(how):
    code = "from torch.utils._python_dispatch import _disable_current_modes\n" + _ring_with(OWN_COMMUNICATOR[how]) + CUPY_ALL_REDUCE
    result = _graded("own-communicator-" + how.replace(" ", "-"), code)
    speed = result.get("distributed_speed") or {}
    assert "ratio" not in speed and "may open no new connection" in speed.get("note", ""), (result["status"], speed)
    assert result["points"] < registry.get("act5.ring_all_reduce").max_points


LONE_EXCHANGE = """

def _lone(step_ops):
    send, receive = step_ops
    if dist.get_rank() % 2 == 0:
        dist.send(send.tensor, send.peer)
        dist.recv(receive.tensor, receive.peer)
    else:
        dist.recv(receive.tensor, receive.peer)
        dist.send(send.tensor, send.peer)
"""


def test_a_ring_of_lone_sends_and_receives_is_timed():
    """A ring of blocking send and recv (torch.distributed's communicator of a pair of ranks, not the
    group's): made before the learner's code loads, it is timed under the no-new-connection rule."""
    batched = "        for request in dist.batch_isend_irecv(step_ops):\n            request.wait()\n"
    result = _graded("lone-sends", _ring_with(replace=(batched, "        _lone(step_ops)\n")) + LONE_EXCHANGE)
    speed = result.get("distributed_speed") or {}
    assert result["status"] == "PASS" and "ratio" in speed, (result["message"], speed)


def test_nccl_bus_bandwidth_is_measured():
    path = _out("nccl-busbw.json")
    assert nccl_bench.main(["--out", str(path)]) == 0
    measured = json.loads(path.read_text())
    assert measured["rows"]["2"] and measured["p2p"]["bytes_per_s"] > 0
    # A 1 GiB all-reduce on two GPUs moves at least PCIe-class bandwidth on any multi-GPU host.
    largest = max((r for r in measured["rows"]["2"] if r["collective"] == "all_reduce"), key=lambda r: r["bytes"])
    assert largest["busbw"] > 5e9, largest


def test_overlapped_data_parallel_step_and_tensor_parallel_step_are_measured():
    from autograder import overlap_bench

    path = _out("overlap.json")
    assert overlap_bench.main(["--out", str(path)]) == 0
    measured = json.loads(path.read_text())
    for world, run in measured["runs"].items():
        # Overlapping the buckets with the backward pass must not make the step slower.
        assert run["overlap_speedup"] >= 1.0, (world, run["seconds"])
