# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: failed peak memory
# Honest but not enough: every other block checkpointed, the others plain. Half the activations are
# still saved: 57% of the plain step (measured), over the 40% target.
from torch.utils.checkpoint import checkpoint


def lean_training_step(model, x):
    h = x
    for index, block in enumerate(model.blocks):
        h = checkpoint(block, h, use_reentrant=False) if index % 2 == 0 else block(h)
    loss = h.square().mean()
    loss.backward()
    return loss
