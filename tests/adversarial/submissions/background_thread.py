# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Returns at once and lets a background thread fill the output later, after the check has looked.
import threading

import torch


def vector_add(x, y):
    out = torch.empty_like(x)

    def finish():
        out.copy_(x)
        out.add_(y)

    threading.Timer(0.5, finish).start()
    return out
