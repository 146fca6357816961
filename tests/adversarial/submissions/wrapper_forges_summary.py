# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: sys._getframe
# Adds with NumPy and forges the interpreter's record of its kernels (naming a kernel it defines and
# never launches). It never asks for a frame
# itself: PyTorch's no_grad decorator calls sys._getframe for it, and from that frame f_back reaches
# the worker's call, whose local `record` builds the report; the forged summary is set on that one
# object, whose class the fingerprint sees unchanged. The sealed worker (autograder.seal) refuses
# frames while any of the learner's code is on the stack, whoever makes the call.
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _forged(out, module_path, inputs=None):
    inputs = inputs or {}
    return {
        "kernels": ["add_kernel"],
        "launches": 1,
        "compile_errors": {},
        "output_stored": True,
        "output_is_what_was_stored": True,
        "inputs_read": {name: 1.0 for name, value in inputs.items() if value.is_floating_point() and value.numel()},
        "most_reads": {name: 1 for name in inputs},
    }


def vector_add(x, y):
    frame = torch.no_grad()(sys._getframe)()
    while frame is not None:
        record = frame.f_locals.get("record")
        if record is not None and hasattr(record, "summary"):
            record.summary = _forged
            break
        frame = frame.f_back
    return torch.from_numpy(x.cpu().numpy() + y.cpu().numpy()).to(x.device)
