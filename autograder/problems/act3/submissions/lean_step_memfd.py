# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: Operation not permitted
# Cheat: the activations kept in a memfd (shared memory, not in the resident set until mapped),
# saved and restored through autograd's saved-tensor hooks.
import os

import torch


def lean_training_step(model, x):
    fd = os.memfd_create("activations")
    offsets = []

    def pack(t):
        data = t.detach().contiguous().numpy().tobytes()
        offset = os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, data)
        offsets.append(offset)
        return (offset, len(data), t.shape)

    def unpack(saved):
        offset, size, shape = saved
        return torch.frombuffer(bytearray(os.pread(fd, size, offset)), dtype=torch.float32).reshape(shape)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = model(x).square().mean()
    loss.backward()
    return loss
