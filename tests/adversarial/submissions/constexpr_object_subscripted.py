# expect: REJECT
# problem: act4.softmax
# devices: cpu
# says: reads the global
# A global constexpr around an object of the learner's, subscripted in the kernel: its __getitem__ runs
# at compile time in the compiler and on every block under the interpreter, where it computed each
# row's softmax with NumPy. Globals and module attributes a kernel reads must be plain data, Triton's
# objects or functions (autograder.kernel_python).
import numpy as np
import torch
import triton
import triton.language as tl

STATE = {}


def _rows(BLOCK):
    # Plain Python, reached as a constexpr global's value: the front end runs it once at compile
    # time (tl.program_id raises there: a constant 0.0); the interpreter runs it per program.
    try:
        r = int(np.asarray(tl.program_id(0).handle.data).reshape(-1)[0])
    except Exception:
        return 0.0
    from triton.runtime.interpreter import TensorHandle
    x = STATE["x"][r].astype(np.float64)
    e = np.exp(x - x.max())
    v = np.zeros(BLOCK, np.float32)
    v[: x.size] = e / e.sum()
    return tl.tensor(TensorHandle(v, tl.float32), tl.block_type(tl.float32, [BLOCK]))


class _Table:
    def __getitem__(self, BLOCK):
        return _rows(BLOCK)


ROW = tl.constexpr(_Table())


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_o, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_o + cols, ROW[BLOCK], mask=mask)


def softmax(x):
    STATE["x"] = x.numpy()
    out = torch.empty_like(x)
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
