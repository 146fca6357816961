"""Act 3, exercise 3.5, second part: cut a training step's peak memory, with the same gradients.

The model: a stack of LAYERS residual MLP blocks (LayerNorm -> Linear(W, 4W) -> GELU -> Linear(4W, W)
+ residual) on a batch of TOKENS rows of width W, float32, on the CPU. Its parameters are 8W^2 + 7W
floats a block: 2.1 MB, 34 MB for the stack (gradients as much again). The plain step saves, per
block, what backward needs: the block's input (LayerNorm's), LayerNorm's output (the first Linear's),
the first Linear's output (GELU's) and GELU's output (the second Linear's): 10 x TOKENS x W floats,
20 MB a block, 320 MB for the stack. Its compute: about 16 x TOKENS x W^2 FLOPs a block forward and
twice that backward, 13 GFLOP a step, seconds on two CPU cores.

Measured here (CPU RSS, two cores, torch 2.13, autograder.memory_judge):
- the plain step: 330.7 MB above the model and input (activations 320 MB, the rest gradients and
  temporaries);
- every block checkpointed (the reference solution): 62.3 MB, 19% of the plain step; one more
  forward pass of compute (the step took about 1.5x as long);
- two blocks per checkpoint: 66 MB, 20%;
- every other block checkpointed, the others plain: 188 MB, 57%, over the target;
- in-place operations alone (the residual add): 332 MB, 101%: every tensor the step could overwrite
  is saved for backward (autograd's version counter refuses the overwrite), the rest die at once;
- bfloat16 autocast: 193 MB, 58%, and not the same gradients.
A grading of the reference takes about 5 s on two cores: three workers start (the first forked from
the judge, the two measured ones each with its own Python, torch and the checkpoint module's imports,
their OpenMP threads sleeping when out of work) and two steps run.
The target, MAX_FRACTION, leaves the reference solution twice its own peak.
"""

from __future__ import annotations

from ...memory_step import MemoryProblem
from ...problem import register

TOKENS, WIDTH, LAYERS = 4096, 128, 16
MAX_FRACTION = 0.4
WARM_UP_ROWS = 8


def make_model(seed: int):
    """The grader's model and input from ``seed``, the same in the trusted worker and the learner's."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(WIDTH)
            self.up = nn.Linear(WIDTH, 4 * WIDTH)
            self.down = nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, x):
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    generator = torch.Generator().manual_seed(seed)
    model = Stack()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            # Scaled so that the residual stream stays of order one through the stack; LayerNorm's
            # weights away from 1 so that their gradients are not all alike.
            fan_in = parameter.shape[-1] if parameter.dim() == 2 else 1
            scale = 0.5 / fan_in**0.5 if parameter.dim() == 2 else 0.1
            offset = 1.0 if name.endswith("norm.weight") else 0.0
            parameter.copy_(offset + scale * torch.randn(parameter.shape, generator=generator))
    x = torch.randn(TOKENS, WIDTH, generator=generator)
    return model, x


def plain_step(model, x):
    loss = model(x).square().mean()
    loss.backward()
    return loss


def warm_up(model, x) -> None:
    """The one-time costs of the first step, paid before either step is measured: torch's thread
    pool, the autograd engine, and torch.utils.checkpoint's first call (it imports torch._dynamo,
    about 150 MB of modules)."""
    from torch.utils.checkpoint import checkpoint

    rows = x[:WARM_UP_ROWS]
    plain_step(model, rows)
    h = rows
    for block in model.blocks:
        h = checkpoint(block, h, use_reentrant=False)
    h.square().mean().backward()
    model.zero_grad(set_to_none=True)


register(
    MemoryProblem(
        name="act3.lean_step",
        title="Cut a training step's peak memory",
        notebook="act3-profiling/memory",
        function="lean_training_step",
        make_model=make_model,
        plain_step=plain_step,
        warm_up=warm_up,
        max_fraction=MAX_FRACTION,
    )
)
