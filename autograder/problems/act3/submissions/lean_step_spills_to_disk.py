# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: temporary directory
# Cheat: the activations moved to a file on disk (the page cache is not the resident set) and read
# back when backward needs them.
import tempfile

import torch


def lean_training_step(model, x):
    spill = tempfile.TemporaryFile()

    def pack(t):
        offset = spill.seek(0, 2)
        spill.write(t.detach().contiguous().numpy().tobytes())
        return (offset, t.shape)

    def unpack(saved):
        offset, shape = saved
        spill.seek(offset)
        data = spill.read(4 * shape.numel())
        return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(shape)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = model(x).square().mean()
    loss.backward()
    return loss
