# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: warnings.warn
# The worker's code reaches standard modules by attribute as it reports: PyTorch's profiler warns
# through warnings.warn when it stops. A function bound in its
# place runs the learner's code inside the report, where it could edit what is being sent. This one
# only passes the call on, and adds honestly: the seal fingerprints these modules as it does builtins
# (autograder.fingerprint.STANDARD), so the rebinding alone rejects the grading.
import warnings

import torch
import triton
import triton.language as tl

_warn = warnings.warn


def _warn_through(*args, **kwargs):
    return _warn(*args, **kwargs)


warnings.warn = _warn_through


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
