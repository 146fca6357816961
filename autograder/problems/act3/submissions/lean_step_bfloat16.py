# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: failed gradients: the gradient of
# Cheat: the step in bfloat16 (autocast), which halves what the linear layers save: the gradients
# are no longer the float32 step's.
import torch


def lean_training_step(model, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    loss = out.float().square().mean()
    loss.backward()
    return loss
