# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: not yours
# A library's Triton kernel may bear a plain name: PyTorch's test helpers define add_kernel
# (torch.testing._internal.triton_utils), the name the Triton tutorial gives a vector add. This source
# defines its own add_kernel, never launched, and launches another add_kernel defined in a file of
# its own making, standing for the library's (importing PyTorch's test helpers asks for frames, which
# the grader refuses for reasons of its own). On a GPU, judged by the profiler's name alone, the other
# kernel passed as the learner's. The worker compiles the kernels of the learner's own file under a
# marked name (autograder.honesty.OWN_MARK), which no other file's bears; on a CPU the interpreter's
# record names the file each kernel came from.
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
