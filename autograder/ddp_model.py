"""The model of exercise 5.3 (data parallelism with gradient buckets): three layers, tanh between
them, and a loss whose backward pass crosses the judge between layers when a grading runs it.

Whether a bucket's all-reduce overlaps the backward pass is a question about order inside the rank:
was it issued before the rank had finished computing the gradients below it? A record of that order
kept in the rank's process can be rearranged by the code it records. So the order is made
observable from outside: in a grading, the gradient flowing from one layer down to the one below
goes to the judge (autograder.relay) and comes back with a perturbation only the judge knows added
to it, and the expected gradients include that perturbation. The layers below cannot get their
gradients right before the judge has answered, so the judge's own order of arrival (each bucket's
all-reduce, each layer's crossing) is the order of the backward pass. Outside a grading (the
notebook's own run, the benchmark) the crossing does nothing.
"""

from __future__ import annotations

import torch

LAYERS = 3
# How the judge records a crossing among a rank's communication (autograder.relay_judge).
BOUNDARY = "grader::boundary"


def forward_loss(params: list, x: torch.Tensor, y: torch.Tensor, crossing=None) -> torch.Tensor:
    """h = x; h = h @ W_i + b_i for each layer, tanh after all but the last; the loss is the batch
    mean of each sample's summed squared error. params = [w0, b0, w1, b1, w2, b2]. The gradient of the
    loss with respect to each layer's input after the first passes through ``crossing(grad, layer)``
    (the judge's, in a grading)."""
    crossing = crossing or through_judge
    h = x
    for i in range(LAYERS):
        if i and h.requires_grad:
            h = h.view_as(h)
            h.register_hook(lambda grad, layer=i: crossing(grad, layer))
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < LAYERS - 1:
            h = torch.tanh(h)
    return ((h - y) ** 2).sum(dim=1).mean()


def through_judge(grad: torch.Tensor, layer: int) -> torch.Tensor:
    """The gradient back from the judge in a grading's rank (autograder.relay), unchanged elsewhere."""
    from . import relay

    group = relay.current_group()
    return grad if group is None else group.boundary(grad, layer)


def perturbations(batch: int, hidden: int, world: int, generator: torch.Generator) -> list[dict]:
    """For each rank, the judge's addition to the gradient at each crossing: a crossing's gradient is
    about 2 (h - y) / batch, and the additions are of that order, so a rank that skips the judge is
    wrong by much more than rounding."""
    return [{layer: torch.randn(batch, hidden, generator=generator, dtype=torch.float64) / batch for layer in range(1, LAYERS)} for _ in range(world)]


def perturbed_gradients(params: list, shards: list, additions: list[dict], dtype) -> list:
    """The ranks' mean gradient in ``dtype``, each rank's loss on its own shard with the judge's
    additions at its crossings: what every rank must end with."""
    total = None
    for (x, y), added in zip(shards, additions, strict=True):
        own = [p.detach().to(dtype).requires_grad_(True) for p in params]
        loss = forward_loss(own, x.to(dtype), y.to(dtype), lambda grad, layer, added=added: grad + added[layer].to(grad.dtype))
        grads = torch.autograd.grad(loss, own)
        total = list(grads) if total is None else [t + g for t, g in zip(total, grads, strict=True)]
    return [t / len(shards) for t in total]
