# expect: REJECT ERROR
# problem: act0.vector_add
# devices: cpu cuda
# slow: on the CPU, 20 s of C++ compilation for a REJECT that calls_torch already gets; its point is the GPU's Triton
# Lets torch.compile write the kernel: a Triton kernel, but generated, not the learner's. (Without a
# C++ compiler the CPU backend may fail outright: ERROR.)
import torch

_compiled = torch.compile(lambda x, y: x + y)


def vector_add(x, y):
    return _compiled(x, y)
