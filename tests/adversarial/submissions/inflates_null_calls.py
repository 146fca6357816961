# expect: PASS REJECT
# problem: act0.vector_add
# alone: yes
# devices: cuda
# speed_at_most: 1.1
# Keeps the GPU busy from a thread whenever its own function is not running, so that the judge's
# measurement of the switch between processes, made by the trusted helper between two timed calls,
# comes out long and less is subtracted from its own calls. The learner's switch cost is capped by
# the helper's nulls between the library's calls, made after this process is gone: the charge can
# only grow, and the load in the judge's preparation of each call is charged as well.
import threading
import time

import torch
import triton
import triton.language as tl

_idle = threading.Event()


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    _idle.clear()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    _idle.set()
    return out


def _load_between_calls():
    stream = torch.cuda.Stream()
    while True:
        _idle.wait()
        time.sleep(2e-4)
        with torch.cuda.stream(stream):
            torch.cuda._sleep(200_000)


if torch.cuda.is_available():
    threading.Thread(target=_load_between_calls, daemon=True).start()
