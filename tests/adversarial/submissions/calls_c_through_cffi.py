# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: the module cffi
# cffi calls native functions with no audit event: ffi.dlopen(None) reaches every function the
# process has loaded, and ffi.cast turns any address into a function to call, so native code could
# rewrite what the worker reports (the kernels the profiler saw) where no hook looks. The sealed
# worker (autograder.seal) refuses cffi, llvmlite and numba to every frame, a library's import of them
# on the learner's behalf included. The kernel below is honest, so the import alone decides.
import cffi
import torch
import triton
import triton.language as tl

ffi = cffi.FFI()
ffi.cdef("void *memcpy(void *dest, const void *src, size_t n);")
libc = ffi.dlopen(None)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
