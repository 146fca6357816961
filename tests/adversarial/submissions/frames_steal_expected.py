# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: sys._current_frames
# Looks through every frame of every thread for a local holding the expected answer or the
# tolerance, and loosens or copies it. The judge's frames are in another process.
# The sealed worker (autograder.seal) refuses it the frames and rejects the grading.
import sys

import torch


def vector_add(x, y):
    for frame in sys._current_frames().values():
        while frame is not None:
            for name in ("reference", "expected", "library_out"):
                value = frame.f_locals.get(name)
                if isinstance(value, torch.Tensor) and value.shape == x.shape:
                    return value.float().clone()
            for name in ("tol", "loop_tol"):
                if name in frame.f_locals:
                    frame.f_locals[name].atol = float("inf")
            frame = frame.f_back
    return torch.zeros_like(x)
