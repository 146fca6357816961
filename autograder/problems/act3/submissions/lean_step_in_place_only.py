# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: failed peak memory
# slow: a second honest step over the target; lean_step_checkpoint_every_other is the one nearer it
# Honest but not enough: in-place operations only. The residual add is done in place; GELU cannot
# be (its backward needs its input), nor anything else autograd saved: no real saving.
import torch.nn.functional as F


def lean_training_step(model, x):
    h = x
    for block in model.blocks:
        out = block.down(F.gelu(block.up(block.norm(h))))
        h = out.add_(h)
    loss = h.square().mean()
    loss.backward()
    return loss
