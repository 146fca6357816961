# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: your step raised
# Cheat: the activations written to the worker's own output, a file opened before the sandbox, and
# read back through /proc/self/fd/1. The output's size limit stops the writes ("File too large");
# where Landlock hides the gradings' folders, reopening the output to read it is refused first.
import os

import torch


def lean_training_step(model, x):
    reader = os.open("/proc/self/fd/1", os.O_RDONLY)

    def pack(t):
        offset = os.lseek(1, 0, os.SEEK_END)
        os.write(1, t.detach().contiguous().numpy().tobytes())
        return (offset, t.shape)

    def unpack(saved):
        offset, shape = saved
        return torch.frombuffer(bytearray(os.pread(reader, 4 * shape.numel(), offset)), dtype=torch.float32).reshape(shape)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = model(x).square().mean()
    loss.backward()
    return loss
