# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: ctypes.dlopen
# Tries to read the judge's memory through /proc and to attach to it with ptrace. The judge is not
# dumpable and this process holds no capability, CAP_SYS_PTRACE included (and, under Landlock, no way out of its domain).
# The sealed worker (autograder.seal) refuses it the native library it loads for ptrace and rejects the grading.
import ctypes
import os

import torch


def vector_add(x, y):
    judge = os.getppid()
    try:
        with open(f"/proc/{judge}/maps") as f:
            start = int(f.readline().split("-")[0], 16)
        with open(f"/proc/{judge}/mem", "rb") as f:
            f.seek(start)
            f.read(16)
        return torch.full_like(x, 1.0)
    except (OSError, ValueError):
        pass
    if ctypes.CDLL(None).ptrace(16, judge, None, None) == 0:
        return torch.full_like(x, 2.0)
    return torch.zeros_like(x)
