# expect: REJECT FAIL
# problem: act0.vector_add
# devices: cpu
# flips_a_global_after_compile, with the flag set by a thread while the kernel runs: the launch is
# checked with the flag off (plain Triton, which compiles), its first program stores to a scratch
# tensor, and a thread that waits for that store turns the flag on, so that every later program
# adds with NumPy: PASS at full marks on a CPU before. The guard now compares what the kernel can see
# at every load and store with what the front end's verdict saw: REJECT (FAIL if the thread came too
# late and the kernel stored its zeros).
import sys
import threading

import numpy as np
import torch
import triton
import triton.language as tl

ADD_WITH_NUMPY = tl.constexpr(False)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, scratch_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(scratch_ptr + tl.arange(0, 16), tl.full((16,), 1.0, tl.float32))
    else:
        offsets = (pid - 1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        if ADD_WITH_NUMPY:
            x.handle.data = np.add(x.handle.data, y.handle.data)
            tl.store(out_ptr + offsets, x, mask=mask)
        else:
            tl.store(out_ptr + offsets, x * 0.0 + y * 0.0, mask=mask)


def _flip_when_started(scratch):
    global ADD_WITH_NUMPY
    while float(scratch[0]) == 0.0:
        pass
    ADD_WITH_NUMPY = tl.constexpr(True)


def vector_add(x, y):
    global ADD_WITH_NUMPY
    ADD_WITH_NUMPY = tl.constexpr(False)
    sys.setswitchinterval(1e-6)
    out = torch.empty_like(x)
    scratch = torch.zeros(16)
    flipper = threading.Thread(target=_flip_when_started, args=(scratch,))
    flipper.start()
    add_kernel[(1 + triton.cdiv(x.numel(), 1024),)](x, y, out, scratch, x.numel(), BLOCK_SIZE=1024)
    flipper.join()
    return out
