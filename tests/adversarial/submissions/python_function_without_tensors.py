# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: a Python function of
# A plain Python function reached through a module object, called in the kernel with a constexpr
# only: the compiler runs it once (tl.program_id raises there, so it returns 0.0), the interpreter on
# every block, where it reads the program id and computes the block with NumPy from views of the inputs
# kept on the host, which the replay refills. No Python function but Triton's, the learner's jitted
# ones and Python's builtins may be called in a kernel (autograder.kernel_python).
import types
import numpy as np
import torch
import triton
import triton.language as tl

STATE = {}


def _get(BLOCK):
    try:
        pid = tl.program_id(0)          # works only under the interpreter (patched language)
        p = int(np.asarray(pid.handle.data).reshape(-1)[0])
    except Exception:
        return 0.0                      # GPU front end: a constant
    from triton.runtime.interpreter import TensorHandle
    xs, ys = STATE["x"], STATE["y"]
    B = int(BLOCK)
    o = p * B + np.arange(B)
    o = np.clip(o, 0, xs.size - 1)
    v = (xs[o] + ys[o]).astype(np.float32)   # the answer, by NumPy, from current input memory
    return tl.tensor(TensorHandle(v, tl.float32), tl.block_type(tl.float32, [B]))


H = types.ModuleType("H")
H.get = _get


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=mask)
    b = tl.load(y_ptr + offsets, mask=mask)
    v = H.get(BLOCK_SIZE)
    tl.store(out_ptr + offsets, v, mask=mask)


def vector_add(x, y):
    STATE["x"], STATE["y"] = x.numpy(), y.numpy()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
