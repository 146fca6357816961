# expect: REJECT
# problem: act0.vector_add
# devices: cpu
# says: calls combine
# A @triton.constexpr_function handed the loaded blocks: the compiler calls it on IR values (it returns
# 0.0, a kernel storing zeros on a GPU), the interpreter on the values (it adds with NumPy's array
# operators). A constexpr function of the learner's is plain Python to both and may not take tensors
# (autograder.kernel_python).
import torch
import triton
import triton.language as tl


@triton.constexpr_function
def combine(a, b):
    data = getattr(a.handle, "data", None)
    if data is None:
        return 0.0
    return type(a)(type(a.handle)(data + b.handle.data, a.handle.dtype), a.type)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 0.0 + combine(x, y), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
