# expect: REJECT
# problem: act0.vector_add
# devices: cuda
# says: replaced on the way to the binary
# The learner's own kernel, honest in its source, with its PTX swapped for a library's through a
# configuration's ir_override (Triton compiles the file named there in place of what the code
# generator made): the library's binary would run under the learner's marked name. Triton's compiler
# in the worker refuses the mark to a kernel whose IR is replaced on the way to the binary
# (autograder.own_compile). GPU only: the interpreter compiles nothing.
import importlib.util
import os
import tempfile

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

LIBRARY = '''
import triton
import triton.language as tl


@triton.jit
def library_add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr0 + offsets, mask=mask) + tl.load(in_ptr1 + offsets, mask=mask), mask=mask)
'''
_folder = tempfile.mkdtemp()
with open(os.path.join(_folder, "library_kernels.py"), "w") as f:
    f.write(LIBRARY)
_spec = importlib.util.spec_from_file_location("library_kernels", os.path.join(_folder, "library_kernels.py"))
library = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(library)


def library_ptx(target) -> str:
    """The library kernel's PTX for ``target``, its entry renamed to the learner's marked name."""
    signature = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
    compiled = triton.compile(ASTSource(library.library_add_kernel, signature, constexprs={"BLOCK_SIZE": 1024}), target=target)
    path = os.path.join(_folder, "add_kernel.ptx")
    with open(path, "w") as f:
        f.write(compiled.asm["ptx"].replace("library_add_kernel", "add_kernel__yours"))
    return path


_capability = torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)
_override = library_ptx(GPUTarget("cuda", _capability[0] * 10 + _capability[1], 32))


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, ir_override=_override)], key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel())
    return out
