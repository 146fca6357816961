# expect: PASS
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: passed peak memory
# slow: a second honest step under the target, beside the reference solution's (tests/test_act3_memory.py)
# Honest: two blocks per checkpoint. Half the inputs kept, two blocks recomputed at once: about the
# same peak as one block per checkpoint (measured 20% of the plain step), under the target.
from torch.utils.checkpoint import checkpoint


def lean_training_step(model, x):
    blocks = list(model.blocks)

    def pair(h, first):
        return blocks[first + 1](blocks[first](h))

    h = x
    for first in range(0, len(blocks), 2):
        h = checkpoint(pair, h, first, use_reentrant=False)
    loss = h.square().mean()
    loss.backward()
    return loss
