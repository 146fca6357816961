# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: Operation not permitted
# slow: the seccomp filter refusing fork is tested directly (test_act3_memory), and lean_step_memfd checks it is on in a grading
# Cheat: a child process holds the activations (its memory is not the worker's resident set), and
# hands each one back when backward asks for it.
import os
import pickle

import torch


def lean_training_step(model, x):
    to_child, from_parent = os.pipe()
    if os.fork() == 0:
        os._exit(0)

    def pack(t):
        os.write(from_parent, pickle.dumps(t.detach()))
        return t.shape

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda shape: torch.zeros(shape)):
        loss = model(x).square().mean()
    loss.backward()
    return loss
