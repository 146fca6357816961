"""Exercise 5.1: ring all-reduce from send and recv, run as 2, 3 and 4 ranks on CPU tensors (each
message carried by the judge, autograder.relay) and,
with two GPUs, timed on NCCL against NCCL's own all-reduce (bus bandwidth at 256 MiB)."""

from __future__ import annotations

import math

import torch

from ...distributed import BusBandwidthSpeed, DistributedProblem
from ...metrics import LIBRARY_RATIO
from ...problem import LinearScale, register

# Lengths that break rings: 1 and 2 (fewer elements than ranks: empty chunks), primes and the
# neighbours of powers of two (uneven chunks), one long enough to need many messages per chunk.
# World sizes graded on every machine: 2 and 3 are the smallest even and odd rings, 4 the one a
# 4-GPU node has. Every rank is a process with its own torch, and every case a new process group
# (a fraction of a second on a CPU): nine cases.
RING_CASES = (
    (2, 1), (2, 7), (2, 100_003),
    (3, 1), (3, 2), (3, 1023), (3, 100_003),
    (4, 7), (4, 100_003),
)

# torch.distributed operations a ring may use: point to point, and a barrier (which moves no data).
RING_ALLOWED = {"c10d::send", "c10d::recv_", "c10d::recv_any_source_", "c10d::barrier", "c10d::monitored_barrier_"}


def ring_inputs(n: int, world_size: int, seed: int) -> list[dict]:
    """One float32 vector per rank, of different scales (never zeros, never equal across ranks)."""
    generator = torch.Generator().manual_seed(seed)
    return [{"tensor": torch.randn(n, generator=generator) * (1.0 + rank)} for rank in range(world_size)]


def ring_reference(inputs: list[dict]) -> list[dict]:
    """Every rank ends with the elementwise sum of all ranks' vectors (computed here in float64)."""
    total = torch.stack([case["tensor"].double() for case in inputs]).sum(0)
    return [{"out": total} for _ in inputs]


def ring_tolerance(inputs: list[dict], expected: list[dict]) -> list[dict]:
    """Summing W float32 values in any order errs by at most (W - 1) u sum|x| (u: float32's unit
    roundoff), plus the final rounding u |sum|; twice that bound is allowed."""
    u = torch.finfo(torch.float32).eps / 2
    world = len(inputs)
    magnitude = torch.stack([case["tensor"].double().abs() for case in inputs]).sum(0)
    bound = 2 * ((world - 1) * u * magnitude + u * expected[0]["out"].abs())
    return [{"out": bound} for _ in inputs]


def ring_traffic_bound(n: int, world_size: int) -> int:
    """The most elements one rank of a ring sends: 2 (W - 1) steps of one chunk of ceil(n / W)."""
    return 2 * (world_size - 1) * math.ceil(n / world_size)


def check_ring_comm(records: list, world_size: int, n: int, inputs: list) -> tuple[str | None, str]:
    """REJECT a library collective (its algorithm, not yours); UNEXPLAINED (rejected if the answers are
    right) a rank that received fewer numbers than its answers depend on; FAIL a rank that sends more
    than a ring does (an exchange of whole vectors is (W - 1) n
    per rank, a ring 2 (W - 1) ceil(n / W))."""
    sent, received = [], []
    for rank, ops in enumerate(records):
        library = sorted({name for name, _ in ops if name not in RING_ALLOWED})
        if library:
            return "REJECT", (
                f"rank {rank} called {', '.join(library)}: torch.distributed's own collective did the work. "
                "Build the all-reduce from dist.send/dist.recv (or isend/irecv) only"
            )
        messages = [elements for name, elements in ops if name == "c10d::send"]
        sent.append((len(messages), sum(messages)))
        received.append(sum(elements for name, elements in ops if name.startswith("c10d::recv")))
    # Each of a rank's n answers depends on every other rank's vector: at least n numbers must reach
    # it. Fewer, and the answer came by some other road (the library, a file, the store).
    short = [(r, count) for r, count in enumerate(received) if count < n]
    if short:
        rank, count = short[0]
        return "UNEXPLAINED", (
            f"rank {rank} received {count:,} elements through send/recv, but its {n:,} answers depend on every other rank's "
            f"vector: at least {n:,} must arrive by recv. Build the all-reduce from dist.send/dist.recv (or isend/irecv)"
        )
    bound = ring_traffic_bound(n, world_size)
    heavy = [(r, elements) for r, (_, elements) in enumerate(sent) if elements > bound]
    if heavy:
        rank, elements = heavy[0]
        return "FAIL", (
            f"rank {rank} sent {elements:,} elements; a ring sends at most 2(W-1) chunks of ceil(n/W) = {bound:,}: "
            "reduce-scatter then all-gather, one chunk per step"
        )
    most = max(sent, key=lambda s: s[1])
    return None, f"busiest rank: {most[0]} messages, {most[1]:,} of at most {bound:,} elements"


NCCL_ALL_REDUCE = '''"""The library's collective, run by the grader's trusted ranks."""
import torch.distributed as dist


def library_collective(tensor):
    dist.all_reduce(tensor)
    return tensor
'''

register(
    DistributedProblem(
        name="act5.ring_all_reduce",
        title="Ring all-reduce from send and recv",
        notebook="act5-multi-gpu/ring_all_reduce",
        function="ring_all_reduce",
        arguments=("tensor",),
        outputs=("out",),
        make_case=lambda n, world, seed: ring_inputs(n, world, seed),
        reference=ring_reference,
        tolerance=ring_tolerance,
        cases=RING_CASES,
        check_comm=check_ring_comm,
        relay=True,
        describe_size=lambda n: f"n = {n:,}",
        correctness_points=2.0,
        speed=BusBandwidthSpeed(
            library="NCCL all_reduce",
            library_source=NCCL_ALL_REDUCE,
            world_size=2,
            numel=64 * 2**20,
            scale=LinearScale(LIBRARY_RATIO, zero_at=0.1, full_at=0.5),
            solution_target=0.7,
        ),
        speed_points=2.0,
    )
)
