# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: not yours
# library_triton_kernel_under_its_name, with the mark forged: the library's kernel object is given the
# repr the worker gives the learner's own kernels (Triton names a compiled kernel by its JIT function's
# repr, a Python attribute of an object in the learner's process), so that on a GPU it would run under
# the name add_kernel__yours, the name the learner's own add_kernel has. On a GPU Triton's compiler in
# the worker refuses the mark to code that is not a function of the learner's file
# (autograder.own_compile); on a CPU the interpreter's record names the file a kernel came from.
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
library.add_kernel._repr = lambda _specialization: "add_kernel" + "__yours"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    library.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out
