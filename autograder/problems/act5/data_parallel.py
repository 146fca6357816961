"""Exercise 5.3: data parallelism with gradient buckets that overlap the backward pass, run as 2, 3 and 4
gloo ranks.

Each rank holds the same three-layer MLP (autograder.ddp_model) and its own shard of the batch. Its
gradients, averaged over the ranks, must equal the mean of the ranks' own gradients; the all-reduces
must be the buckets the exercise defines (filled in the order gradients become ready, launched as soon
as they reach ``bucket_cap`` elements, the remainder after the backward pass), and the first of them
must reach the judge before the backward pass has crossed into the first layer. The crossings are the
judge's (autograder.ddp_model): each gradient passed down from one layer to the one below comes back
with an addition only the judge holds, so the expected gradients include it and the order in which the
judge saw all-reduces and crossings is the rank's order."""

from __future__ import annotations

import torch

from ...ddp_model import BOUNDARY, LAYERS, perturbations, perturbed_gradients
from ...distributed import JUDGE_ONLY, DistributedProblem
from ...problem import register

# (batch per rank, input, hidden, output, bucket_cap in elements).
# Two, three and four ranks: each rank is a process, and a CPU grading must fit nbgrader's cell time
# (the reference solution's took 14-22 s on a 2-core machine, its gradients crossing the judge between layers).
DDP_CASES = (
    (2, (3, 13, 48, 5, 1000)),
    (2, (1, 7, 33, 3, 300)),
    (3, (2, 9, 40, 6, 500)),
    (4, (2, 11, 36, 4, 400)),
)
DDP_OUTPUTS = tuple(f"grad_{kind}{i}" for i in range(LAYERS) for kind in ("w", "b"))
TOLERANCE_FACTOR = 16.0
COMM_OK = {"c10d::allreduce_", "c10d::barrier", BOUNDARY}


def ddp_inputs(size: tuple, world_size: int, seed: int) -> list[dict]:
    batch, d_in, d_hidden, d_out, cap = size
    generator = torch.Generator().manual_seed(seed)
    dims = [d_in, d_hidden, d_hidden, d_out]
    params = []
    for i in range(LAYERS):
        params.append(torch.randn(dims[i], dims[i + 1], generator=generator) / dims[i] ** 0.5)
        params.append(torch.randn(dims[i + 1], generator=generator) * 0.3)
    x = torch.randn(batch * world_size, d_in, generator=generator)
    y = torch.randn(batch * world_size, d_out, generator=generator)
    additions = perturbations(batch, d_hidden, world_size, generator)
    return [
        {"params": [p.clone() for p in params], "x": x[r * batch:(r + 1) * batch].clone(), "y": y[r * batch:(r + 1) * batch].clone(), "bucket_cap": cap, JUDGE_ONLY: additions[r]}
        for r in range(world_size)
    ]


def _grads(inputs: list[dict], dtype) -> dict:
    shards = [(c["x"], c["y"]) for c in inputs]
    grads = perturbed_gradients(inputs[0]["params"], shards, [c[JUDGE_ONLY] for c in inputs], dtype)
    return dict(zip(DDP_OUTPUTS, grads, strict=True))


def ddp_reference(inputs: list[dict]) -> list[dict]:
    """Every rank ends with the mean of the ranks' gradients, each taken with the judge's additions at
    its own crossings (with none, the gradient of the whole batch's loss)."""
    full = _grads(inputs, torch.float64)
    return [full for _ in inputs]


def ddp_tolerance(inputs: list[dict], expected: list[dict]) -> list[dict]:
    exact, single = expected[0], _grads(inputs, torch.float32)
    eps = torch.finfo(torch.float32).eps
    bound = {n: TOLERANCE_FACTOR * float((single[n].double() - exact[n]).abs().max()) + eps * float(exact[n].abs().max()) for n in DDP_OUTPUTS}
    return [dict(bound) for _ in inputs]


def expected_buckets(sizes_in_ready_order: list[int], cap: int) -> list[int]:
    """The bucket sizes the rule gives: fill in ready order, launch when a bucket reaches cap."""
    buckets, current = [], 0
    for size in sizes_in_ready_order:
        current += size
        if current >= cap:
            buckets.append(current)
            current = 0
    if current:
        buckets.append(current)
    return buckets


def check_ddp_comm(records: list, world_size: int, size: tuple, inputs: list) -> tuple[str | None, str]:
    """What the judge carried for each rank, in the order it arrived: only all-reduces (no broadcast, no
    library wrapper's other collectives), buckets of the rule's sizes, every layer boundary crossed,
    and the first all-reduce before the judge first saw the crossing into the first layer."""
    cap = size[-1]
    sizes = [p.numel() for p in inputs[0]["params"]]
    total, largest = sum(sizes), max(sizes)
    for rank, ops in enumerate(records):
        comm = [(i, name, n) for i, (name, n) in enumerate(ops) if name.split("::")[0] in ("c10d", "_c10d_functional", "c10d_functional")]
        other = sorted({name for _, name, _ in comm if name not in COMM_OK})
        if other:
            return "REJECT", f"rank {rank} called {', '.join(other)}: the exercise's buckets are all-reduced with dist.all_reduce, and nothing else communicates"
        reduces = [(i, n) for i, name, n in comm if name == "c10d::allreduce_"]
        amounts = [n for _, n in reduces]
        if sum(amounts) != total:
            return "FAIL", f"rank {rank} all-reduced {sum(amounts):,} elements in all; the model has {total:,} parameters, each gradient all-reduced once"
        early = amounts[:-1]
        if any(n < cap for n in early) or any(n >= cap + largest for n in early) or (amounts and amounts[-1] >= cap + largest):
            return "FAIL", (
                f"rank {rank} all-reduced buckets of {amounts} elements with bucket_cap = {cap:,}: a bucket is launched as soon as it "
                "holds at least bucket_cap elements (so every bucket but the last holds at least that many, and less than bucket_cap "
                "plus one parameter), the rest once the backward pass is over"
            )
        # Where the judge first saw each layer's crossing: a crossing asked for again later says nothing.
        crossed = {}
        for i, (name, layer) in enumerate(ops):
            if name == BOUNDARY:
                crossed.setdefault(layer, i)
        if len(crossed) < LAYERS - 1:
            return "FAIL", (
                f"rank {rank}'s backward pass crossed {len(crossed)} of the model's {LAYERS - 1} layer boundaries: compute the loss "
                "with the exercise's forward_loss (from autograder.ddp_model import forward_loss), whose gradients pass through the grader"
            )
        if len(amounts) > 1 and reduces[0][0] > crossed[1]:
            return "FAIL", (
                f"rank {rank} issued its first all-reduce after the backward pass had reached the first layer: launch each bucket from a gradient "
                "hook (register_post_accumulate_grad_hook) as soon as it is full, with async_op=True, so that it overlaps the rest of the backward pass"
            )
    return None, f"buckets of {amounts} elements; the first issued during the backward pass" if len(amounts) > 1 else f"one bucket of {amounts} elements"


register(
    DistributedProblem(
        name="act5.ddp_buckets",
        title="Data parallelism with gradient buckets overlapping the backward pass",
        notebook="act5-multi-gpu/ddp_buckets",
        function="ddp_step",
        arguments=("params", "x", "y", "bucket_cap"),
        outputs=DDP_OUTPUTS,
        make_case=ddp_inputs,
        reference=ddp_reference,
        tolerance=ddp_tolerance,
        cases=DDP_CASES,
        check_comm=check_ddp_comm,
        # The buckets' all-reduces are computed by the judge, which counts them and places them among
        # the backward pass's crossings (autograder.relay, autograder.ddp_model).
        relay=True,
        relay_collectives=("allreduce", "boundary"),
        describe_size=lambda s: f"batch {s[0]} per rank, layers {s[1]}-{s[2]}-{s[2]}-{s[3]}, bucket_cap {s[4]:,}",
        correctness_points=3.0,
    )
)
