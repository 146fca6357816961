# expect: FAIL ERROR
# problem: act0.vector_add
# devices: cpu cuda
# Drops a torch.py beside the notebook and junk into every kernel cache it can see, hoping the next
# exercise imports or loads them. Where the kernel has Landlock the sandbox refuses the writes (ERROR);
# elsewhere the files reach nothing (FAIL, for the zeros).
import os
from pathlib import Path

import torch

for folder in {os.environ.get("PWD", "."), os.environ.get("TRITON_CACHE_DIR", "."), os.environ.get("CUPY_CACHE_DIR", ".")}:
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    (path / "torch.py").write_text("raise SystemExit('planted torch.py was imported')\n")
    (path / "triton.py").write_text("raise SystemExit('planted triton.py was imported')\n")


def vector_add(x, y):
    return torch.zeros_like(x)
