# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: _original_store
# A kernel that loads both inputs and stores zeros, and a store of its own put where the interpreter
# guard keeps the store it wraps: each store of the kernel writes NumPy's sums at the same
# addresses instead, and the guard, which reads the stored bytes back after the store, records them
# as the kernel's. On the tree where the guard kept the functions it wrapped in a dictionary its
# hooks closed over, the dictionary could be edited in place and nothing noticed; now they are
# bound as functions of autograder.interpreter, where the seal's fingerprint sees a rebinding.
import numpy as np
import torch
import triton
import triton.language as tl

import autograder.interpreter
import triton.runtime.interpreter as triton_interpreter


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    both = tl.load(x_ptr + offsets, mask=mask, other=0.0) + tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, both * 0.0, mask=mask)


def _swap_store(answer: np.ndarray, base: int, itemsize: int) -> None:
    def store(self, ptrs, value, mask, *args, **kwargs):
        index = (ptrs.data.astype(np.int64) - base) // itemsize
        inside = (index >= 0) & (index < answer.size)
        value.data[inside] = answer[index[inside]]
        return real(self, ptrs, value, mask, *args, **kwargs)

    if hasattr(autograder.interpreter, "_original_store"):
        real = autograder.interpreter._original_store
        autograder.interpreter._original_store = store
        return
    hook = triton_interpreter.InterpreterBuilder.create_masked_store
    for cell in hook.__closure__ or ():
        held = cell.cell_contents
        if isinstance(held, dict) and "store" in held:
            real = held["store"]
            held["store"] = store
            return


def vector_add(x, y):
    out = torch.empty_like(x)
    _swap_store((x.numpy() + y.numpy()).reshape(-1), out.data_ptr(), out.element_size())
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
