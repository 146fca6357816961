"""Exercise 5.4: a tensor-parallel MLP (Megatron-LM's split), run as 2, 3 and 4 gloo ranks.

Each rank holds a column shard of the first weight and a row shard of the second; the output and
every gradient must equal the unsharded MLP's, with exactly one all-reduce in the forward pass and one
in the backward pass, each of one activation (batch x hidden)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...distributed import DistributedProblem
from ...problem import register

# (batch, hidden, ffn per rank): hidden sizes that are no multiple of anything, a batch of one.
# Two, three (an odd split of the ffn dimension) and four ranks: each rank is a process, and a CPU
# grading must fit nbgrader's cell time (the reference solution's took 11.9 s on a 2-core machine).
TP_CASES = ((2, (4, 16, 12)), (2, (1, 7, 5)), (3, (3, 33, 7)), (4, (2, 20, 6)))
TP_OUTPUTS = ("out", "grad_x", "grad_w1", "grad_b1", "grad_w2", "grad_b2")
# The course's float32 run against the float64 reference, times this factor, is the tolerance.
TOLERANCE_FACTOR = 16.0


def tp_inputs(size: tuple, world_size: int, seed: int) -> list[dict]:
    """Rank r gets x, b2 and grad_out whole, and its shards: columns r*f..(r+1)*f of w1 and b1, rows
    of w2 (f = ffn per rank)."""
    batch, hidden, per_rank = size
    ffn = per_rank * world_size
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, hidden, generator=generator) * 2
    w1 = torch.randn(hidden, ffn, generator=generator) / hidden**0.5
    b1 = torch.randn(ffn, generator=generator) * 0.5
    w2 = torch.randn(ffn, hidden, generator=generator) / ffn**0.5
    b2 = torch.randn(hidden, generator=generator) * 0.5
    grad_out = torch.randn(batch, hidden, generator=generator)
    cases = []
    for r in range(world_size):
        cols = slice(r * per_rank, (r + 1) * per_rank)
        cases.append({
            "x": x.clone(), "w1": w1[:, cols].clone(), "b1": b1[cols].clone(), "w2": w2[cols, :].clone(),
            "b2": b2.clone(), "grad_out": grad_out.clone(),
        })
    return cases


def mlp_with_grads(x, w1, b1, w2, b2, grad_out, dtype=torch.float64) -> dict:
    """The unsharded MLP out = GeLU(x w1 + b1) w2 + b2 (exact erf GeLU) and the gradients of
    sum(out * grad_out) with respect to every input, in ``dtype``."""
    leaves = [t.detach().to(dtype).requires_grad_(True) for t in (x, w1, b1, w2, b2)]
    xx, ww1, bb1, ww2, bb2 = leaves
    out = F.gelu(xx @ ww1 + bb1) @ ww2 + bb2
    out.backward(grad_out.to(dtype))
    return {"out": out.detach(), "grad_x": xx.grad, "grad_w1": ww1.grad, "grad_b1": bb1.grad, "grad_w2": ww2.grad, "grad_b2": bb2.grad}


def _unsharded(inputs: list[dict]) -> tuple:
    first = inputs[0]
    w1 = torch.cat([c["w1"] for c in inputs], dim=1)
    b1 = torch.cat([c["b1"] for c in inputs])
    w2 = torch.cat([c["w2"] for c in inputs], dim=0)
    return first["x"], w1, b1, w2, first["b2"], first["grad_out"]


def _per_rank(full: dict, inputs: list[dict]) -> list[dict]:
    out = []
    for r, case in enumerate(inputs):
        f = case["b1"].numel()
        cols = slice(r * f, (r + 1) * f)
        out.append({
            "out": full["out"], "grad_x": full["grad_x"], "grad_w1": full["grad_w1"][:, cols], "grad_b1": full["grad_b1"][cols],
            "grad_w2": full["grad_w2"][cols, :], "grad_b2": full["grad_b2"],
        })
    return out


def tp_reference(inputs: list[dict]) -> list[dict]:
    return _per_rank(mlp_with_grads(*_unsharded(inputs)), inputs)


def tp_tolerance(inputs: list[dict], expected: list[dict]) -> list[dict]:
    """Per output: TOLERANCE_FACTOR times the largest error of the unsharded float32 computation
    against the float64 reference, plus float32's epsilon times the output's largest magnitude (the
    sharded sums round in another order)."""
    exact = mlp_with_grads(*_unsharded(inputs))
    single = mlp_with_grads(*_unsharded(inputs), dtype=torch.float32)
    eps = torch.finfo(torch.float32).eps
    bound = {name: TOLERANCE_FACTOR * float((single[name].double() - exact[name]).abs().max()) + eps * float(exact[name].abs().max()) for name in TP_OUTPUTS}
    return [dict(bound) for _ in inputs]


def check_tp_comm(records: list, world_size: int, size: tuple, inputs: list) -> tuple[str | None, str]:
    """Exactly two all-reduces per rank, each of one batch x hidden activation (the forward pass's
    partial outputs, the backward pass's partial input gradients); no other collective. Gathering
    the weights would undo the sharding: REJECTED."""
    batch, hidden, _ = size
    activation = batch * hidden
    for rank, ops in enumerate(records):
        others = sorted({name for name, _ in ops if "all_reduce" not in name and "allreduce" not in name and name not in ("c10d::barrier", "_c10d_functional::wait_tensor", "_c10d_functional::_wrap_tensor_autograd")})
        if others:
            return "REJECT", f"rank {rank} called {', '.join(others)}: tensor parallelism keeps the weights sharded and needs only all-reduces of activations"
        reduces = [elements for name, elements in ops if name in ("c10d::allreduce_", "_c10d_functional::all_reduce", "_c10d_functional_autograd::all_reduce")]
        if len(reduces) != 2 or any(e != activation for e in reduces):
            return "FAIL", (
                f"rank {rank} issued {len(reduces)} all-reduces of {reduces} elements; the MLP needs exactly 2, each of "
                f"batch x hidden = {activation}: one of the partial outputs (forward), one of the partial input gradients (backward)"
            )
    return None, f"2 all-reduces of {activation:,} elements per rank"


register(
    DistributedProblem(
        name="act5.tp_mlp",
        title="Tensor-parallel MLP: column- then row-parallel, one all-reduce each way",
        notebook="act5-multi-gpu/tp_mlp",
        function="tp_mlp",
        arguments=("x", "w1", "b1", "w2", "b2", "grad_out"),
        outputs=TP_OUTPUTS,
        make_case=tp_inputs,
        reference=tp_reference,
        tolerance=tp_tolerance,
        cases=TP_CASES,
        check_comm=check_tp_comm,
        # The two all-reduces are computed by the judge, which counts them (autograder.relay).
        relay=True,
        relay_collectives=("allreduce",),
        describe_size=lambda s: f"batch {s[0]}, hidden {s[1]}, ffn {s[2]} per rank",
        correctness_points=3.0,
    )
)
