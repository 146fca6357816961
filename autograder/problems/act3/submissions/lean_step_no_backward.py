# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: failed gradients
# Cheat: the right loss and no backward pass at all: the lowest peak, and no gradients.
import torch


def lean_training_step(model, x):
    with torch.no_grad():
        return model(x).square().mean()
