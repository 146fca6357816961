# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: outside your code
# A kernel of the learner's own name and file whose body only calls a library's Triton kernel as a
# device function: Triton inlines the library's code into the learner's kernel, which runs under the
# learner's marked name. Triton's compiler in the worker refuses it (autograder.own_compile): a kernel
# of the learner's calls only functions of the learner's file and triton.language's. On a CPU the
# interpreter runs the library's function as Python inside the learner's launch; the same comparison
# runs there while Triton's front end builds the kernel's IR.
import importlib.util
import os
import tempfile

import torch
import triton
import triton.language as tl

LIBRARY = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr0 + offsets, mask=mask) + tl.load(in_ptr1 + offsets, mask=mask), mask=mask)
'''
_path = os.path.join(tempfile.mkdtemp(), "triton_utils.py")
with open(_path, "w") as f:
    f.write(LIBRARY)
_spec = importlib.util.spec_from_file_location("triton_utils", _path)
library = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(library)
library_add = library.add_kernel


@triton.jit
def my_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    library_add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE)


def vector_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    my_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out
