"""Exercise 5.2: the alpha-beta cost model of collectives, answered exactly in Python.

A message of m bytes between two ranks costs alpha + m / bandwidth (alpha: the fixed cost of a
message, its latency; bandwidth: the link's bytes per second). Collectives are sums of such steps
(Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations in MPICH",
2005): a ring all-reduce is a reduce-scatter and an all-gather, 2 (p - 1) steps of S / p bytes each;
a binomial-tree all-reduce is a reduce and a broadcast, 2 ceil(log2 p) steps of the whole S. Bus
bandwidth is nccl-tests' figure of merit (its doc/PERFORMANCE.md): the algorithm bandwidth S / t
times the share of the data each rank's link must carry, so that one number can be compared with
the link's speed whatever the number of ranks."""

from __future__ import annotations

import random

# nccl-tests' bus-bandwidth factors: busbw = algbw * factor(p).
BUS_FACTORS = {
    "all_reduce": lambda p: 2 * (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "all_gather": lambda p: (p - 1) / p,
    "all_to_all": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}


def tree_depth(world_size: int) -> int:
    """Steps of a binomial tree over p ranks: ceil(log2 p), exactly, for any integer p >= 1."""
    return (world_size - 1).bit_length()


def allreduce_times(size_bytes: float, world_size: int, alpha_s: float, bandwidth: float) -> dict:
    """Predicted seconds of an all-reduce of ``size_bytes`` over ``world_size`` ranks:
    {"ring": 2 (p-1) (alpha + S / (p B)), "tree": 2 ceil(log2 p) (alpha + S / B),
     "faster": "ring" or "tree" (the ring on a tie)}."""
    p = world_size
    ring = 2 * (p - 1) * (alpha_s + size_bytes / (p * bandwidth))
    tree = 2 * tree_depth(p) * (alpha_s + size_bytes / bandwidth)
    return {"ring": ring, "tree": tree, "faster": "ring" if ring <= tree else "tree"}


def crossover_bytes(world_size: int, alpha_s: float, bandwidth: float) -> float:
    """The message size at which the ring and the tree take the same time: below it the tree's fewer
    steps win, above it the ring's smaller messages do. 0.0 where the ring is never slower (p <= 3:
    the ring has no more steps than the tree)."""
    p, depth = world_size, tree_depth(world_size)
    extra_steps = (p - 1) - depth
    if extra_steps <= 0:
        return 0.0
    return extra_steps * alpha_s * bandwidth / (depth - (p - 1) / p)


def bus_bandwidth(collective: str, size_bytes: float, seconds: float, world_size: int) -> dict:
    """nccl-tests' two bandwidths for one timed collective: {"algbw": S / t, "busbw": algbw times
    the collective's factor} (all_reduce 2 (p-1)/p; reduce_scatter, all_gather, all_to_all (p-1)/p;
    broadcast, reduce 1)."""
    algbw = size_bytes / seconds
    return {"algbw": algbw, "busbw": algbw * BUS_FACTORS[collective](world_size)}


# Links, as (alpha in seconds, bandwidth in bytes/s per direction): rounded figures of the kinds
# the chapter compares; the exercise checks the model, not the hardware.
LINKS = {"nvlink": (3e-6, 450e9), "pcie": (5e-6, 25e9), "network": (10e-6, 50e9)}


def allreduce_cases(seed: int) -> list:
    r = random.Random(seed)
    fixed = [
        # Two ranks: one step each way, ring and tree alike in latency; the ring halves the bytes.
        dict(size_bytes=256 * 2**20, world_size=2, alpha_s=LINKS["nvlink"][0], bandwidth=LINKS["nvlink"][1]),
        # Eight ranks, a tiny message: 14 ring steps against 6 tree steps, latency decides.
        dict(size_bytes=4096, world_size=8, alpha_s=LINKS["network"][0], bandwidth=LINKS["network"][1]),
        # Eight ranks, a large message: the ring's S/p messages decide.
        dict(size_bytes=2**30, world_size=8, alpha_s=LINKS["network"][0], bandwidth=LINKS["network"][1]),
        # A world that is not a power of two, and one rank more than one.
        dict(size_bytes=1_000_003, world_size=5, alpha_s=LINKS["pcie"][0], bandwidth=LINKS["pcie"][1]),
        dict(size_bytes=12_345, world_size=3, alpha_s=2e-6, bandwidth=100e9),
    ]
    for _ in range(8):
        alpha, bandwidth = LINKS[r.choice(sorted(LINKS))]
        fixed.append(dict(size_bytes=int(10 ** r.uniform(2, 10)), world_size=r.randrange(2, 1025), alpha_s=alpha * r.uniform(0.5, 2), bandwidth=bandwidth * r.uniform(0.5, 2)))
    return fixed


def crossover_cases(seed: int) -> list:
    r = random.Random(seed)
    fixed = [dict(world_size=p, alpha_s=5e-6, bandwidth=50e9) for p in (2, 3, 4, 5, 8, 9, 64, 1000)]
    return fixed + [dict(world_size=r.randrange(2, 4097), alpha_s=10 ** r.uniform(-6.5, -4.5), bandwidth=10 ** r.uniform(9.5, 11.8)) for _ in range(6)]


def bus_cases(seed: int) -> list:
    r = random.Random(seed)
    fixed = [
        dict(collective="all_reduce", size_bytes=256 * 2**20, seconds=2.0e-3, world_size=8),
        dict(collective="all_reduce", size_bytes=256 * 2**20, seconds=2.0e-3, world_size=2),
        dict(collective="all_gather", size_bytes=2**30, seconds=5.0e-3, world_size=4),
        dict(collective="reduce_scatter", size_bytes=2**30, seconds=5.0e-3, world_size=3),
        dict(collective="broadcast", size_bytes=2**20, seconds=4.0e-5, world_size=16),
        dict(collective="all_to_all", size_bytes=2**24, seconds=1.0e-4, world_size=8),
    ]
    return fixed + [dict(collective=r.choice(sorted(BUS_FACTORS)), size_bytes=int(10 ** r.uniform(3, 10)), seconds=10 ** r.uniform(-5, -1), world_size=r.randrange(2, 257)) for _ in range(6)]
