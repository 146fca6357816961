# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: a Python function of
# A plain Python function whose __module__ is set to "triton.language", called in the kernel with no
# argument: a block of NumPy under the interpreter, 0.0 to the compiler. A function is Triton's only
# when its code lies in Triton's installed files (autograder.kernel_python).
import numpy as np
import torch
import triton
import triton.language as tl

_HELD = {"calls": 0}


def answer_block():
    # Under the interpreter (knobs.runtime.interpret True), the program ids run in order: count the
    # calls to know the block, compute x + y for it with NumPy from the held inputs, hand back a
    # tl.tensor over that NumPy array. Under the front end's compile (interpret False): 0.0.
    if not triton.knobs.runtime.interpret or "x" not in _HELD:
        return 0.0
    x, y = _HELD["x"], _HELD["y"]
    n = x.numel()
    blocks = (n + 1023) // 1024
    pid = _HELD["calls"] % blocks
    _HELD["calls"] += 1
    idx = np.minimum(np.arange(pid * 1024, pid * 1024 + 1024), n - 1)
    vals = (x.detach().numpy().reshape(-1)[idx] + y.detach().numpy().reshape(-1)[idx]).astype(np.float32)
    from triton.runtime.interpreter import TensorHandle
    return tl.tensor(TensorHandle(vals, tl.float32), tl.block_type(tl.float32, [1024]))


answer_block.__module__ = "triton.language"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 0.0 + y * 0.0 + answer_block(), mask=mask)


def vector_add(x, y):
    _HELD["x"], _HELD["y"], _HELD["calls"] = x, y, 0
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
