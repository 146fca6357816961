# expect: PASS
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: passed peak memory
# slow: the reference solution's own step, graded in full by tests/test_act3_memory.py in every run
# Honest: every block checkpointed, as the reference solution does: one block's activations alive
# at a time in the backward pass, the blocks' inputs kept between.
from torch.utils.checkpoint import checkpoint


def lean_training_step(model, x):
    h = x
    for block in model.blocks:
        h = checkpoint(block, h, use_reentrant=False)
    loss = h.square().mean()
    loss.backward()
    return loss
