# expect: ERROR
# problem: act0.vector_add
# devices: cpu cuda
# says: Could not load this library
# Writes a shared library into a folder it may write (here a copy of the C math library: any native
# code would do) and has PyTorch load it: torch.ops.load_library calls ctypes from PyTorch's own
# frame, which the seal lets through. Native code in the worker could rewrite what the worker reports.
# The worker's writable folders are mounted noexec (autograder.noexec): the load fails ("failed to map
# segment from shared object", which PyTorch reports as "Could not load this library"), whoever asks.
# The kernel below is honest, so the load alone decides the verdict.
import os

import torch
import triton
import triton.language as tl

with open("/proc/self/maps") as maps:
    original = next(line.split()[-1] for line in maps if "/libm.so" in line or "/libm-" in line)
copy = os.path.join(os.environ["TMPDIR"], "libnative_helper.so")
with open(original, "rb") as source, open(copy, "wb") as target:
    target.write(source.read())
torch.ops.load_library(copy)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
