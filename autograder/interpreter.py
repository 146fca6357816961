"""A fix for the Triton interpreter, applied when it is switched on.

The interpreter keeps bfloat16 values as their 16-bit patterns (numpy has no bfloat16), and its
``tl.dot`` multiplies those patterns as if they were integers, so any bf16 matmul or attention
kernel gives nonsense on a CPU while the same kernel is right on a GPU (seen with Triton 3.9).
Widening the bf16 operands to float32 first (a bf16 value is the top half of a float32) gives the
products a GPU's tensor cores compute, exactly, with the float32 accumulation they use.
"""

from __future__ import annotations

import os


def patch_bf16_dot() -> bool:
    """Make the interpreter's ``tl.dot`` right for bfloat16 operands; True when the patch is in place."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    original = getattr(builder, "create_dot", None)
    if original is None:
        return False
    if getattr(original, "_bf16_widened", False):
        return True

    def widen(handle):
        if handle.dtype.scalar == tl.bfloat16:
            data = (handle.data.astype(np.uint32) << 16).view(np.float32)
            return interpreter.TensorHandle(data, tl.float32)
        return handle

    def create_dot(self, a, b, d, *args, **kwargs):
        return original(self, widen(a), widen(b), d, *args, **kwargs)

    create_dot._bf16_widened = True
    builder.create_dot = create_dot
    return True
