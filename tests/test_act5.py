"""Act 5's distributed grading on CPU: the ranks' outputs and records as the judge reads them, the
ring's traffic rules, an honest ring graded as 2, 3 and 4 gloo ranks, and the timed protocol of the
speed part run on gloo (on GPUs it runs on NCCL: tests/gpu/test_act5_gpu.py)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from autograder import distributed, distributed_cases, distributed_speed, grading, osguard, ranks, registry, template
from autograder.problems.act5 import collectives

ROOT = Path(__file__).resolve().parent.parent

HONEST_RING = '''
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = tensor.clone()
    size = -(-out.numel() // world)
    chunks = [out[i * size:(i + 1) * size] for i in range(world)]
    right, left = (rank + 1) % world, (rank - 1) % world
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(world - 1):
            send_i = (rank - step + (phase == "all-gather")) % world
            recv_i = (send_i - 1) % world
            buf = torch.empty_like(chunks[recv_i])
            request = dist.isend(chunks[send_i].contiguous(), right)
            dist.recv(buf, left)
            request.wait()
            chunks[recv_i].add_(buf) if phase == "reduce-scatter" else chunks[recv_i].copy_(buf)
    return out
'''


def test_outputs_cross_as_raw_bytes():
    values = (torch.arange(5, dtype=torch.float32), torch.ones(2, 3, dtype=torch.float64))
    meta, data = ranks.encode_outputs(values, ["a", "b"])
    got = distributed_cases.decode_outputs(meta, data, ["a", "b"])
    assert torch.equal(got["a"], values[0]) and torch.equal(got["b"], values[1])
    with pytest.raises(ValueError):
        distributed_cases.decode_outputs([{**meta[0], "nbytes": 400}, meta[1]], data, ["a", "b"])
    with pytest.raises(TypeError, match="expected a and b"):
        ranks.encode_outputs(values[0], ["a", "b"])
    with pytest.raises(TypeError, match="torch.Tensor"):
        ranks.encode_outputs([1.0, values[1]], ["a", "b"])


def test_compare_names_the_rank_and_the_place():
    want = torch.zeros(4, dtype=torch.float64)
    assert distributed_cases.compare({"out": want.float()}, {"out": want}, {"out": 0.0}, 2) is None
    bad = want.clone()
    bad[3] = 1.0
    message = distributed_cases.compare({"out": bad}, {"out": want}, {"out": 1e-6}, 2)
    assert message.startswith("rank 2: out wrong at 1 of 4") and "at 3: got 1" in message
    assert "shape" in distributed_cases.compare({"out": want[:3]}, {"out": want}, {"out": 0.0}, 0)
    nan = want.clone()
    nan[0] = float("nan")
    assert distributed_cases.compare({"out": nan}, {"out": want}, {"out": 1.0}, 0)


def _records(world, n, *, extra=(), sent=None, received=None):
    chunk = -(-n // world)
    per_rank = []
    for _ in range(world):
        ops = [["c10d::send", chunk], ["c10d::recv_", chunk]] * (2 * (world - 1))
        if sent is not None:
            ops = [["c10d::send", sent], ["c10d::recv_", received if received is not None else n]]
        per_rank.append(ops + [list(e) for e in extra])
    return per_rank


def test_ring_traffic_rules():
    n, world = 1001, 3
    status, facts = collectives.check_ring_comm(_records(world, n), world, n, None)
    assert status is None and "4 messages" in facts
    status, message = collectives.check_ring_comm(_records(world, n, extra=[("c10d::allreduce_", n)]), world, n, None)
    assert status == "REJECT" and "c10d::allreduce_" in message
    status, message = collectives.check_ring_comm(_records(world, n, extra=[("_c10d_functional::all_reduce", n)]), world, n, None)
    assert status == "REJECT"
    # Whole vectors to everyone: (W - 1) n elements, more than 2 (W - 1) ceil(n / W).
    status, message = collectives.check_ring_comm(_records(world, n, sent=(world - 1) * n), world, n, None)
    assert status == "FAIL" and "reduce-scatter then all-gather" in message
    # Right answers with fewer than n elements received: they came some other way.
    status, message = collectives.check_ring_comm(_records(world, n, sent=10, received=10), world, n, None)
    assert status == "UNEXPLAINED" and "at least 1,001 must arrive" in message
    # A barrier moves no data and is allowed.
    assert collectives.check_ring_comm(_records(world, n, extra=[("c10d::barrier", 0)]), world, n, None)[0] is None


def test_ring_cases_are_awkward_and_tolerance_is_derived():
    worlds = {w for w, _ in collectives.RING_CASES}
    assert worlds == {2, 3, 4}
    assert any(n < w for w, n in collectives.RING_CASES), "a length shorter than the ring (empty chunks)"
    assert any(n % w for w, n in collectives.RING_CASES if n > w), "uneven chunks"
    inputs = collectives.ring_inputs(1000, 3, seed=1)
    assert not torch.equal(inputs[0]["tensor"], inputs[1]["tensor"]) and bool(inputs[0]["tensor"].ne(0).all())
    expected = collectives.ring_reference(inputs)
    bound = collectives.ring_tolerance(inputs, expected)[0]["out"]
    # A float32 sum in any order is inside the bound; the input itself, zeros and another seed's answer are not.
    for order in ((0, 1, 2), (2, 1, 0)):
        total = inputs[order[0]]["tensor"] + inputs[order[1]]["tensor"] + inputs[order[2]]["tensor"]
        assert bool(((total.double() - expected[0]["out"]).abs() <= bound).all())
    other = collectives.ring_reference(collectives.ring_inputs(1000, 3, seed=2))[0]["out"]
    for wrong in (inputs[0]["tensor"].double(), torch.zeros(1000, dtype=torch.float64), other):
        assert not bool(((wrong - expected[0]["out"]).abs() <= bound).all())


def test_honest_ring_passes_on_every_world_size():
    problem = registry.get("act5.ring_all_reduce")
    result = grading.grade_source(problem, HONEST_RING, "ring_all_reduce", device="cpu", timeout=240)
    assert result["status"] == "PASS", (result["message"], result.get("cases"), result.get("output"))
    assert result["points"] == problem.correctness_points
    assert len(result["cases"]) == len(collectives.RING_CASES)
    assert "needs 2 GPUs" in result["speed_note"]


def test_the_ranks_reach_no_service_on_the_hosts_network(tmp_path):
    """The timed run's ranks keep sockets (NCCL's meet over the loopback network), but in a network of
    their own: a service listening on the host's loopback (a Jupyter server, a GPU host engine) is not
    there. Every rank tries it when the module loads and cannot load if it gets through. The ranks of
    the graded cases, whose messages the judge carries, have no sockets at all."""
    import socket

    from autograder.netns import PrivateNetwork

    with socket.socket() as service:
        service.bind(("127.0.0.1", 0))
        service.listen()
        probe = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {service.getsockname()[1]}), timeout=5).close()\n"
            "except OSError:\n"
            "    pass\n"
            "else:\n"
            "    raise SystemExit('reached a service on the host network')\n"
        )
        network = PrivateNetwork()
        try:
            module = tmp_path / "submission.py"
            module.write_text(probe + HONEST_RING)
            row = _timed_on_gloo(tmp_path, module, network=network)
        finally:
            network.close()
        no_socket = "try:\n    socket.socket().close()\nexcept OSError:\n    pass\nelse:\n    raise SystemExit('a graded rank made a socket')\n"
        for name, function, notebook in (("act5.ring_all_reduce", "ring_all_reduce", None), ("act5.tp_mlp", "tp_mlp", None), ("act5.ddp_buckets", "ddp_step", "ddp_buckets")):
            code = HONEST_RING if notebook is None and function == "ring_all_reduce" else _solution(function, notebook)
            graded = grading.grade_source(registry.get(name), "import socket\n" + no_socket + code, function, device="cpu", timeout=240)
            assert graded["status"] == "PASS", (name, graded["message"], graded.get("output"))
    if network.fact.startswith("the ranks keep the host's network"):
        # A machine where no namespace can be made: the grading says so, and the service was reached.
        assert "could not be loaded" in row.get("note", ""), row
    else:
        assert "ratio" in row, row


def _solution(function: str, notebook: str | None = None) -> str:
    from autograder import source

    cells = source.notebook_cells(str(ROOT / "solutions" / "act5-multi-gpu" / f"{notebook or function}.ipynb"))
    return source.extract(cells, function)


def _solution_ring() -> str:
    return _solution("ring_all_reduce")


def _timed_on_gloo(tmp_path, module, numel: int = 1000, calls: int = 2, network=None) -> dict:
    """The speed part's timed protocol (distributed_speed.compare_speed) for the ring in ``module``,
    as two gloo ranks on CPU tensors (in ``network``, an autograder.netns.PrivateNetwork, if given)."""
    problem = registry.get("act5.ring_all_reduce")
    g = SimpleNamespace(
        workdir=str(tmp_path), device="cpu", problem=problem, learner=None, remaining=lambda: 200.0, network=network,
        job={"module": str(module), "entry": "ring_all_reduce", "problem": problem.name},
    )
    speed = distributed.BusBandwidthSpeed(
        library="gloo all_reduce", library_source=collectives.NCCL_ALL_REDUCE, world_size=2, numel=numel,
        scale=problem.speed.scale, solution_target=0.0, calls=calls,
    )
    return distributed_speed.compare_speed(g, speed, "gloo")


def test_every_timed_round_has_inputs_of_its_own(tmp_path, monkeypatch):
    """The best of three rounds is kept: a round on an earlier round's inputs could be answered from
    a collective's memory of them."""
    from autograder import distributed_ranks

    seeds = []
    exchange = distributed_ranks.Ranks.exchange

    def recording(self, world, requests, *args, **kwargs):
        seeds.extend((id(self), request["seed"]) for request, _ in requests if request.get("op") == "rank_arm")
        return exchange(self, world, requests, *args, **kwargs)

    monkeypatch.setattr(distributed_ranks.Ranks, "exchange", recording)
    module = tmp_path / "submission.py"
    module.write_text(_solution_ring())
    assert "ratio" in _timed_on_gloo(tmp_path, module)
    for group in {owner for owner, _ in seeds}:
        rounds = [seed for owner, seed in seeds if owner == group]
        # Two ranks armed with one seed a round, three rounds, each seed new.
        assert len(rounds) == 6 and rounds[::2] == rounds[1::2] and len(set(rounds)) == 3, rounds


# The isend-then-recv ring goes through the same protocol in test_ranks_reach_each_others_abstract_sockets.
@pytest.mark.parametrize("submission", [pytest.param("isend then recv", marks=pytest.mark.slow), "the reference (batch_isend_irecv)"])
def test_timed_protocol_on_gloo(tmp_path, submission):
    """The speed part's protocol (arm, go, read two calls back, the library in trusted ranks), on
    CPU tensors: what runs on NCCL with two GPUs."""
    module = tmp_path / "submission.py"
    module.write_text(HONEST_RING if submission == "isend then recv" else _solution_ring())
    row = _timed_on_gloo(tmp_path, module, numel=10_007, calls=3)
    assert "ratio" in row, row
    assert row["busbw"] > 0 and row["library_busbw"] > 0
    assert row["bytes"] == 4 * 10_007
    # What issuing a call cost the slowest rank's CPU, learner's and library's: at most the call's time.
    assert 0 < row["candidate_issue_cpu_s"] <= row["candidate_s"] * 1.05 and 0 < row["library_issue_cpu_s"] <= row["library_s"] * 1.05, row


RANKS_REACH_EACH_OTHER = """
import itertools
import os
import socket

import torch.distributed as dist

CALLS = itertools.count()


def reach_rank_zero():
    # NCCL passes buffers between ranks over abstract UNIX sockets: rank 1 must reach rank 0's.
    rank, name = dist.get_rank(), f"\\0gpu-brrr-test-{os.getppid()}-{next(CALLS)}"
    server = None
    if rank == 0:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(name)
        server.listen(1)
    dist.barrier()
    if rank == 1:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(name)
            client.sendall(b"x")
    if server is not None:
        connection, _ = server.accept()
        assert connection.recv(1) == b"x"
        connection.close()
        server.close()
    dist.barrier()
    assert os.environ.get("NCCL_NVLS_ENABLE") == "0", "NVLink SHARP must stay off"
"""


def test_ranks_reach_each_others_abstract_sockets(tmp_path):
    """Each rank is sandboxed in a Landlock domain of its own, and NCCL's cuMem buffers pass
    between ranks as file descriptors over abstract UNIX sockets: on two H100s a sandbox that
    scoped those sockets failed the ring with "ncclProxyClientGetFd". The ranks of the timed run
    (each call first has rank 1 reach a socket rank 0 made) must get through."""
    module = tmp_path / "submission.py"
    module.write_text(RANKS_REACH_EACH_OTHER + HONEST_RING.replace(
        "    rank, world = dist.get_rank(), dist.get_world_size()\n",
        "    reach_rank_zero()\n    rank, world = dist.get_rank(), dist.get_world_size()\n",
    ))
    row = _timed_on_gloo(tmp_path, module)
    assert "ratio" in row, row


def test_a_rank_that_dies_in_the_timed_run_costs_only_the_speed(tmp_path):
    """A ring whose ranks die only on the timed run (on two H100s an isend-then-recv ring aborted
    NCCL): the speed part says where, what the ranks printed says why, and the error does not end
    the grading."""
    module = tmp_path / "submission.py"
    module.write_text("import os, sys\n" + HONEST_RING.replace(
        "    rank, world = dist.get_rank(), dist.get_world_size()\n",
        "    if tensor.numel() == 1000:\n        print('last words before the abort', file=sys.stderr, flush=True)\n        os.abort()\n"
        "    rank, world = dist.get_rank(), dist.get_world_size()\n",
    ))
    row = _timed_on_gloo(tmp_path, module)
    # The signal the report names is SIGABRT, or SIGKILL when the judge's clean-up reaches a rank
    # still writing its core dump: either way the note says where the ranks died.
    assert "ratio" not in row and "on gloo" in row["note"] and "the process running your code" in row["note"], row
    assert "last words before the abort" in row.get("rank_output", ""), row


def test_timed_protocol_catches_a_wrong_timed_call(tmp_path):
    module = tmp_path / "submission.py"
    module.write_text("def ring_all_reduce(tensor):\n    return tensor\n")
    row = _timed_on_gloo(tmp_path, module)
    assert row.get("wrong") and "wrong answer" in row["note"]


HIDDEN_IN_THE_TIMED_RUN = {
    "modes switched off": "    with _disable_current_modes():\n        dist.all_reduce(torch.ones(1024))\n",
    "the group's own method": "    with _disable_current_modes():\n        dist.group.WORLD.allreduce([torch.ones(1024)]).wait()\n",
}


@pytest.mark.parametrize("hiding", sorted(HIDDEN_IN_THE_TIMED_RUN))
def test_a_collective_hidden_from_the_timed_record_is_rejected(tmp_path, hiding):
    """The timed ranks' record of communication lives in the learner's process, where a collective can
    run with the record switched off; the process group's own flight record counts it, and the timed
    run is rejected (the correctness cases, on the relay, pass: the hidden call runs only on gloo)."""
    module = tmp_path / "submission.py"
    hide = "    if dist.get_backend() == 'gloo':\n" + "".join("    " + line + "\n" for line in HIDDEN_IN_THE_TIMED_RUN[hiding].splitlines())
    module.write_text(
        "from torch.utils._python_dispatch import _disable_current_modes\n" + _solution_ring().replace(
            "    rank, world = dist.get_rank(), dist.get_world_size()\n", hide + "    rank, world = dist.get_rank(), dist.get_world_size()\n", 1
        )
    )
    row = _timed_on_gloo(tmp_path, module)
    assert row.get("reject") and "the process group's own record of rank" in row["note"], row


@pytest.mark.parametrize("where", ["in each call", "when the module loads"])
def test_the_timed_ranks_cannot_connect_anew(tmp_path, where):
    """The timed ranks join their group and make its connections before the learner's module loads,
    then may open no socket: a second group (made in a call, or a rendezvous of the learner's own
    when the module loads) is refused, and the timed run earns no ratio (autograder.ranks.Bench.connect)."""
    module = tmp_path / "submission.py"
    if where == "in each call":
        extra = "    if dist.get_backend() == 'gloo':\n        dist.all_reduce(torch.ones(1024), group=dist.new_group([0, 1]))\n"
        module.write_text(_solution_ring().replace("    rank, world = dist.get_rank(), dist.get_world_size()\n", extra + "    rank, world = dist.get_rank(), dist.get_world_size()\n", 1))
    else:
        module.write_text("import socket\nsocket.socket().close()\n" + _solution_ring())
    row = _timed_on_gloo(tmp_path, module)
    assert "ratio" not in row, row
    if where == "in each call":
        assert "may open no new connection" in row["note"], row
    else:
        assert "could not be loaded" in row["note"], row


# The system call filters are written for Linux on x86-64 (autograder.seccomp).
SECCOMP_HERE = pytest.mark.skipif(os.uname().sysname != "Linux" or os.uname().machine != "x86_64", reason="the filter is written for Linux on x86-64")

THREAD_BEFORE_THE_FILTER = """
import gc, socket, sys, threading
from autograder import seccomp

asked, answered = threading.Event(), []
def older():
    asked.wait()
    # A collection in this thread runs the callbacks registered later, from any code.
    gc.callbacks.append(lambda phase, info: None)
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        answered.append("opened")
    except PermissionError:
        answered.append("refused")
    left, right = socket.socketpair()
    answered.append("unix")
thread = threading.Thread(target=older)
thread.start()
said = seccomp.forbid_new_connections(every_thread=True)
asked.set()
thread.join()
print(said, answered)
sys.exit(0 if answered == ["refused", "unix"] else 1)
"""


@SECCOMP_HERE
def test_no_thread_of_a_timed_rank_can_connect_anew():
    """The filter a timed rank takes once connected reaches the threads running before it (a gc
    callback or a CUDA host function of the learner's can run in one of them): they are refused an
    internet socket too, and keep UNIX ones."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", THREAD_BEFORE_THE_FILTER], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "in any thread" in done.stdout, done.stdout


STORE_UNDER_THE_FILTERS = """
import datetime, subprocess, sys
import torch.distributed as dist
from autograder import seccomp

if sys.argv[1] == "refused first":
    assert seccomp.forbid_io_uring() is None
port = sys.argv[2]
store = dist.TCPStore("127.0.0.1", int(port), 2, True, timeout=datetime.timedelta(seconds=30), wait_for_workers=False)
assert seccomp._install(seccomp.reach_program(passing=True), every_thread=True) is None
client = "import datetime, sys, torch.distributed as d; d.TCPStore('127.0.0.1', int(sys.argv[1]), 2, False, timeout=datetime.timedelta(seconds=30)).set('k', 'v')"
subprocess.run([sys.executable, "-c", client, port], check=True, timeout=60)
print("served", store.get("k"))
"""


def _io_uring_usable() -> bool:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ring = libc.syscall(425, 4, ctypes.create_string_buffer(120))
    if ring >= 0:
        os.close(ring)
    return ring >= 0


@SECCOMP_HERE
def test_a_timed_ranks_store_keeps_serving_under_the_reach_filter():
    """Rank 0 hosts its group's store (libuv's event loop) before the reach filter refuses io_uring to
    every thread: io_uring refused first (autograder.ranks.Bench.connect), the loop polls without a ring
    and serves a rank that connects afterwards; with a ring made before the filter, libuv aborts the
    process (SIGABRT, as two H200s showed) where the kernel lets a ring be made."""
    import subprocess
    import sys

    from autograder.distributed_ranks import free_port

    def hosted(order: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", STORE_UNDER_THE_FILTERS, order, str(free_port())], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[1])

    served = hosted("refused first")
    assert served.returncode == 0 and "served b'v'" in served.stdout, served.stdout + served.stderr[-2000:]
    if _io_uring_usable():
        aborted = hosted("ring first")
        assert aborted.returncode == -6 and "io_uring_enter" in aborted.stderr, (aborted.returncode, aborted.stderr[-2000:])


def test_the_flight_record_is_read_as_nccl_writes_it(monkeypatch):
    """autograder.flight_record on entries shaped as NCCL 2.28 under torch 2.11 wrote them on two H100s
    (tests/gpu/probe_ring_record.py): a ring's batches are point-to-point entries and a
    ``nccl:coalesced`` one carrying the group's collective count; a barrier passes; an all-reduce, a
    count grown by a collective the record no longer holds, a cleared record or one with no send
    are reported."""
    from autograder import flight_record

    def entry(record, name, sequence, p2p=False, sizes=((1 << 25,),), group=0):
        return {"record_id": record, "pg_id": group, "collective_seq_id": sequence, "profiling_name": name, "is_p2p": p2p, "input_sizes": [list(s) for s in sizes]}

    def batch(record, sequence):
        return [entry(record, "nccl:send 0->1", sequence, True), entry(record + 1, "nccl:recv 0<-1", sequence, True), entry(record + 2, "nccl:coalesced", sequence, sizes=())]

    armed = [entry(0, "nccl:all_reduce", 1, sizes=((1,),))]
    state = {}
    monkeypatch.setattr(flight_record, "_trace", lambda backend: state["trace"])
    state["trace"] = {"entries": armed}
    marked = flight_record.mark("nccl")
    assert marked == {"record": 0, "sequence": {0: 1}}

    def since(*entries):
        state["trace"] = {"entries": armed + list(entries)}
        return flight_record.collectives_since(marked, "nccl")

    assert since(*batch(1, 1), *batch(4, 1)) == []
    # An earlier round's group of the same id counted further: the mark takes each group's latest entry.
    state["trace"] = {"entries": [entry(-2, "nccl:all_reduce", 5, sizes=((1,),)), *armed]}
    assert flight_record.mark("nccl")["sequence"] == {0: 1}
    assert since(*batch(1, 1), entry(4, "nccl:all_reduce", 2, sizes=((1,),)), *batch(5, 2)) == []
    assert since(*batch(1, 1), entry(4, "nccl:all_reduce", 2), *batch(5, 2)) == ["nccl:all_reduce"]
    assert since(entry(9, "nccl:all_reduce", 1, sizes=((1024,),), group=3), *batch(1, 1)) == ["nccl:all_reduce"]
    assert since(*batch(1, 2))[0].startswith("a collective missing from the record")
    state["trace"] = {"entries": batch(1, 2)}
    assert "lost its entries" in flight_record.collectives_since(marked, "nccl")[0]
    assert since(entry(4, "nccl:all_reduce", 1, sizes=((1,),))) == ["no send or receive in the timed calls (the record was cleared)"]
    state["trace"] = None
    assert flight_record.collectives_since(marked, "nccl") is None


def test_no_rank_process_outlives_a_grading():
    problem = registry.get("act5.ring_all_reduce")
    hang = "import torch\nimport torch.distributed as dist\n\ndef ring_all_reduce(tensor):\n    dist.recv(torch.empty(1), (dist.get_rank() + 1) % 2)\n"

    def alive_workers() -> list[int]:
        """The processes below this test's own but the template this process's CPU gradings fork their
        judges from (autograder.template), which outlives each of them: this grading's judge and
        its ranks. The gradings of other tests running beside this one (pytest-xdist, or another
        checkout on the machine) are not below this process."""
        return [pid for pid in osguard.descendants(os.getpid()) if pid != _template_pid()]

    # Watched while the grading runs, so the test cannot pass by looking for the wrong processes.
    seen: set[int] = set()
    grading_done = threading.Event()

    def watch() -> None:
        while not grading_done.is_set():
            seen.update(alive_workers())
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        # The grading's time limit bounds the case's: 20 s is ample for two ranks to start (forked,
        # autograder.template; even started with their own Pythons) and hang.
        result = grading.grade_source(problem, hang, "ring_all_reduce", device="cpu", timeout=20)
    finally:
        grading_done.set()
        watcher.join()
    assert result["status"] == "TIMEOUT" and "ranks 0, 1 of 2 did not finish" in result["message"]
    # The judge and the two ranks (the template may have started during the grading).
    seen.discard(_template_pid())
    assert len(seen) >= 3, f"the test saw {len(seen)} of this grading's processes while it ran"

    # The kill is sent before the grading returns; give the kernel a moment to finish it.
    deadline = time.monotonic() + 5
    while alive_workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive_workers()


def _template_pid() -> int | None:
    return template._template.process.pid if template._template is not None else None


def test_timed_run_rejects_the_library_collective(tmp_path):
    """A function whose timed calls (GPU tensors, in a real grading) use dist.all_reduce: the timed
    calls are recorded and checked like the graded ones."""
    module = tmp_path / "submission.py"
    module.write_text("import torch.distributed as dist\n\ndef ring_all_reduce(tensor):\n    dist.all_reduce(tensor)\n    return tensor\n")
    row = _timed_on_gloo(tmp_path, module)
    assert row.get("reject") and "c10d::allreduce_" in row["note"], row
    scored = distributed.score(registry.get("act5.ring_all_reduce"), {"status": "PASS", "distributed_speed": row}, "cuda")
    assert scored["status"] == "REJECT" and scored["points"] == 0


def test_overlap_bench_runs_the_reference_solutions_on_gloo():
    """issue 22's measurement of the data-parallel and tensor-parallel steps, at toy sizes on CPU
    tensors: the solutions load from their notebooks and every step runs (its times mean nothing)."""
    from autograder import overlap_bench

    sizes = {"ddp_width": 32, "ddp_batch": 8, "bucket_elements": 1000, "tp_tokens": 4, "tp_hidden": 16, "tp_ffn": 32, "iters": 1}
    result = overlap_bench.measure(2, sizes, backend="gloo")
    assert set(result["seconds"]) == {"one bucket after the backward pass", "buckets overlapping the backward pass", "tensor-parallel MLP step"}
    assert result["parameters"] == 3 * (32 * 32 + 32) and result["overlap_speedup"] > 0


def test_the_judge_carries_and_counts_the_ranks_messages():
    """autograder.relay.Relay: a message to another rank still in its call is handed on and counted on
    both sides (elements of 4 bytes); one to a rank that has answered is counted as sent only; a
    barrier's are counted as barriers; a message to no other rank of the group is refused."""
    from autograder import relay, relay_judge

    carried = relay_judge.Relay(3)
    delivered = []
    answered = {2}
    carry = lambda source, header, payload: carried.carry(source, header, payload, lambda dst, h, p: delivered.append((dst, h, p)), lambda r: r in answered)  # noqa: E731
    assert carry(0, {"relay": 1, "tag": 0}, b"\0" * 40) is None
    assert delivered == [(1, {"op": "relay_in", "src": 0, "tag": 0}, b"\0" * 40)]
    assert carry(1, {"relay": 2, "tag": 3}, b"\0" * 8) is None
    assert len(delivered) == 1
    assert carry(1, {"relay": 0, "tag": relay.BARRIER_TAG}, b"") is None
    assert carried.records == [[["c10d::send", 10]], [["c10d::recv_", 10], ["c10d::send", 2], ["c10d::barrier", 0]], []]
    for wrong in ({"relay": 1, "tag": 0}, {"relay": 3, "tag": 0}, {"relay": True, "tag": 0}, {"relay": 2, "tag": "x"}):
        assert "not another rank" in carry(1, wrong, b"")


def test_a_ring_that_hides_the_librarys_collective_is_rejected():
    """The ring's ranks join the judge's relay: the library's all-reduce, with every dispatch mode
    switched off so no record in the rank sees it, has no group to run on, and the grading is rejected
    by name (ring_hides_the_collective is the suite's case; this is its shortest form)."""
    problem = registry.get("act5.ring_all_reduce")
    hidden = (
        "import torch.distributed as dist\n"
        "from torch.utils._python_dispatch import _disable_current_modes\n\n\n"
        "def ring_all_reduce(tensor):\n"
        "    out = tensor.clone()\n"
        "    with _disable_current_modes():\n"
        "        dist.all_reduce(out)\n"
        "    return out\n"
    )
    result = grading.grade_source(problem, hidden, "ring_all_reduce", device="cpu", timeout=240)
    assert result["status"] == "REJECT" and "torch.distributed's own collective" in result["message"], result["message"]


def test_the_judge_computes_the_all_reduces_it_carries():
    """An all-reduce on the relay: each rank's part is kept until every rank gave its own, then the
    judge reduces them in rank order and hands the result to every rank still in its call; a problem
    that allows none refuses it, and parts that differ between ranks are an error."""
    from autograder import relay_judge

    def run(parts, allowed=("allreduce",), reduce="SUM", answered=()):
        carried, delivered = relay_judge.Relay(len(parts), allowed), []
        messages = []
        for rank, values in enumerate(parts):
            tensor = torch.tensor(values, dtype=torch.float32)
            header = {"collective": "allreduce", "sequence": 1, "reduce": reduce, "dtype": "float32", "shape": list(tensor.shape)}
            messages.append(carried.carry(rank, header, tensor.numpy().tobytes(), lambda dst, h, p: delivered.append((dst, h, p)), lambda r: r in answered))
        return carried, delivered, messages

    carried, delivered, messages = run([[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]], answered=(2,))
    assert messages == [None, None, None]
    assert [dst for dst, _, _ in delivered] == [0, 1]
    assert torch.frombuffer(bytearray(delivered[0][2]), dtype=torch.float32).tolist() == [111.0, 222.0]
    assert carried.records == [[["c10d::allreduce_", 2]]] * 3 and not carried.pending
    _, delivered, _ = run([[1.0, 8.0], [4.0, 2.0]], reduce="MAX")
    assert torch.frombuffer(bytearray(delivered[0][2]), dtype=torch.float32).tolist() == [4.0, 8.0]
    _, delivered, messages = run([[1.0], [2.0]], allowed=())
    assert "does not carry" in messages[0] and not delivered
    _, _, messages = run([[1.0], [2.0, 3.0]])
    assert messages[0] is None and "differs between ranks" in messages[1]


def test_a_record_is_merged_with_what_the_judge_carried():
    """The rank's own record says where each all-reduce fell among its operations; the judge's count
    says how large each was. A record with more or fewer all-reduces than the judge carried is None."""
    from autograder import distributed_cases

    own = [["aten::mm", 0], ["c10d::allreduce_", 5], ["aten::mm", 0], ["c10d::allreduce_", 5]]
    carried = [["c10d::allreduce_", 300], ["c10d::send", 4], ["c10d::allreduce_", 12]]
    assert distributed_cases.merge(own, carried) == [["aten::mm", 0], ["c10d::allreduce_", 300], ["aten::mm", 0], ["c10d::allreduce_", 12], ["c10d::send", 4]]
    assert distributed_cases.merge([["c10d::allreduce_", 1], *own], carried) is None
    # A functional all-reduce's operator and the mark it made on the group are one all-reduce.
    functional = [["_c10d_functional::all_reduce", 5], ["c10d::allreduce_", 5], ["_c10d_functional::wait_tensor", 5]]
    assert distributed_cases.merge(functional, [["c10d::allreduce_", 7]], reduces=True) == [["c10d::allreduce_", 7], ["_c10d_functional::wait_tensor", 5]]


def test_the_judge_adds_its_own_part_at_each_crossing_and_places_it():
    """autograder.relay_judge.Relay at a crossing of exercise 5.3's model: the gradient comes back to its
    rank with the judge's addition for that rank and layer, the crossing is recorded where it arrived
    among the rank's all-reduces, and a crossing the judge does not expect (a layer, a shape, a
    problem without crossings) is an error. Merged with the rank's record, the judge's order stands."""
    from autograder import distributed_cases, relay_judge

    added = [{1: torch.full((2, 3), 0.5, dtype=torch.float64)}, {1: torch.full((2, 3), -1.0, dtype=torch.float64)}]
    carried, delivered = relay_judge.Relay(2, ("allreduce", "boundary"), added), []
    grad = torch.arange(6, dtype=torch.float64).reshape(2, 3)

    def cross(rank, layer=1, tensor=grad, relay=carried):
        header = {"collective": "boundary", "sequence": 4, "layer": layer, "shape": list(tensor.shape)}
        return relay.carry(rank, header, tensor.numpy().tobytes(), lambda dst, h, p: delivered.append((dst, h, p)), lambda r: False)

    part = torch.ones(2, dtype=torch.float32)
    reduce = {"collective": "allreduce", "sequence": 1, "reduce": "SUM", "dtype": "float32", "shape": [2]}
    assert carried.carry(1, reduce, part.numpy().tobytes(), lambda *a: None, lambda r: False) is None
    assert cross(1) is None
    assert delivered[0][:2] == (1, {"op": "collective_in", "sequence": 4})
    assert torch.frombuffer(bytearray(delivered[0][2]), dtype=torch.float64).reshape(2, 3).equal(grad - 1.0)
    assert carried.records[1] == [["c10d::allreduce_", 2], ["grader::boundary", 1]]
    assert "does not expect" in cross(0, layer=2)
    assert "does not expect" in cross(0, tensor=torch.zeros(3, 2, dtype=torch.float64))
    assert "does not expect" in cross(0, relay=relay_judge.Relay(2, ("allreduce",), added))
    assert "does not expect" in cross(0, relay=relay_judge.Relay(2, ("allreduce", "boundary"), [None, None]))
    own = [["c10d::allreduce_", 2]]
    assert distributed_cases.merge(own, carried.records[1], reduces=True) == [["c10d::allreduce_", 2], ["grader::boundary", 1]]
    late = [["grader::boundary", 1], ["c10d::allreduce_", 2]]
    assert distributed_cases.merge([["c10d::allreduce_", 9]], late, reduces=True) == late


def test_the_exercise_model_crosses_nothing_outside_a_grading():
    """autograder.ddp_model: without the judge, forward_loss is the plain three-layer model and its
    crossings change no gradient; the expected gradients with no additions are the whole batch's, and
    an addition at a crossing changes the gradients below it only."""
    from autograder import ddp_model

    generator = torch.Generator().manual_seed(3)
    dims = [5, 7, 7, 2]
    params = [t for i in range(3) for t in (torch.randn(dims[i], dims[i + 1], generator=generator, dtype=torch.float64), torch.randn(dims[i + 1], generator=generator, dtype=torch.float64))]
    x, y = torch.randn(4, 5, generator=generator, dtype=torch.float64), torch.randn(4, 2, generator=generator, dtype=torch.float64)
    own = [p.clone().requires_grad_(True) for p in params]
    plain = torch.autograd.grad(ddp_model.forward_loss(own, x, y), own)
    h = x
    for i in range(3):
        h = h @ own[2 * i] + own[2 * i + 1]
        h = torch.tanh(h) if i < 2 else h
    assert all(torch.allclose(a, b) for a, b in zip(plain, torch.autograd.grad(((h - y) ** 2).sum(dim=1).mean(), own), strict=True))
    zero = [{1: torch.zeros(2, 7, dtype=torch.float64), 2: torch.zeros(2, 7, dtype=torch.float64)}] * 2
    shards = [(x[:2], y[:2]), (x[2:], y[2:])]
    assert all(torch.allclose(a, b) for a, b in zip(ddp_model.perturbed_gradients(params, shards, zero, torch.float64), plain, strict=True))
    nudged = [{1: torch.zeros(2, 7, dtype=torch.float64), 2: torch.ones(2, 7, dtype=torch.float64)}, zero[1]]
    moved = ddp_model.perturbed_gradients(params, shards, nudged, torch.float64)
    assert [not torch.allclose(a, b) for a, b in zip(moved, plain, strict=True)] == [True, True, True, True, False, False]
