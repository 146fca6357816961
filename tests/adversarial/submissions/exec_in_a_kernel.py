# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: a Python builtin a kernel may not call
# A kernel that hands a string to Python's exec (reached as triton.language.core's own import of
# builtins, no import or global of its own): under the interpreter the string runs in the kernel's
# frame, adds the loaded blocks' memory with NumPy and writes the sum into a block the kernel then
# stores, so the kernel loads every input, stores the output and replays right on new inputs. On a
# GPU the string runs once while compiling, where no block exists (the try makes it a no-op there).
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    total = x * 0.0
    tl.core.builtins.exec("try: __import__('numpy').add(x.handle.data, y.handle.data, out=total.handle.data)\nexcept Exception: pass")
    tl.store(out_ptr + offsets, total, mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
