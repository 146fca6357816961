# expect: PASS
# problem: act0.vector_add
# devices: cuda
# speed_at_most: 1.2
# Writes a ceilings cache claiming a copy bandwidth of 1 GB/s, so that any kernel would look like
# thousands of percent of it, then runs an honest kernel. The judge measures the ceilings itself
# in every grading (and the sandbox refuses the write where it can): the speed is the honest one.
import json
import os

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out

_fake = {"version": 2, "copy": {"bytes_per_s": 1e9, "buffer_bytes": 1 << 30, "median_ms": 1.0}, "matmul": {"float32": {"flop_per_s": 1e9, "n": 4096, "median_ms": 1.0}}}
for folder in (os.environ.get("AUTOGRADER_CACHE_DIR"), os.path.expanduser("~/.cache/gpu-brrr")):
    if folder:
        try:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "ceilings.json"), "w") as f:
                json.dump({"any": _fake}, f)
        except OSError:
            pass
