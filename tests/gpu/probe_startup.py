"""Where a grading process's start-up time goes on this GPU: importing torch, creating the CUDA
context, and the profiler's first and second start (CUPTI's set-up), with the profiler started
before or after the context exists. Prints one JSON line per variant."""

from __future__ import annotations

import subprocess
import sys

VARIANT = r'''
import json, sys, time
t = [("start", time.perf_counter())]
import torch
t.append(("import torch", time.perf_counter()))
from torch.profiler import ProfilerActivity, profile
def cycle():
    p = profile(activities=[ProfilerActivity.CUDA], acc_events=True)
    p.__enter__()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None
    p.__exit__(None, None, None)
    list(p.events())
if sys.argv[1] == "profiler-first":
    cycle(); t.append(("profiler before context", time.perf_counter()))
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t.append(("cuda context", time.perf_counter()))
import triton
t.append(("import triton", time.perf_counter()))
cycle(); t.append(("profiler cycle 1", time.perf_counter()))
cycle(); t.append(("profiler cycle 2", time.perf_counter()))
print(json.dumps({"variant": sys.argv[1], **{name: round(b - a, 3) for (_, a), (name, b) in zip(t, t[1:])}}))
'''

for variant in ("context-first", "profiler-first", "context-first"):
    done = subprocess.run([sys.executable, "-c", VARIANT, variant], capture_output=True, text=True)
    print(done.stdout.strip() or done.stderr[-2000:])
