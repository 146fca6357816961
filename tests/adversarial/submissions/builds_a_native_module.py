# expect: ERROR
# problem: act0.vector_add
# devices: cpu cuda
# says: failed to map segment
# Builds a C extension from source text of its own with Triton's helper (the one Triton builds its
# launchers with: it compiles with the system's compiler into Triton's cache and imports the result
# from Triton's own frame, which the seal lets through) and calls it when the module loads. Native
# code in the worker could rewrite what the worker reports. The worker's writable folders, Triton's
# cache among them, are mounted noexec (autograder.noexec): the build succeeds and the import fails
# to map it. The kernel below is honest, so the import alone decides the verdict.
import torch
import triton
import triton.language as tl
from triton.runtime.build import compile_module_from_src

SOURCE = r"""
#include <Python.h>
static PyObject *hello(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"hello", hello, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_helper", NULL, -1, methods};
PyMODINIT_FUNC PyInit_native_helper(void) { return PyModule_Create(&module); }
"""
assert compile_module_from_src(SOURCE, "native_helper").hello() == 42


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
