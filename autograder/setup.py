"""The one setup call at the top of every exercise notebook."""

from __future__ import annotations

import os


def setup() -> str:
    """Pick the device and say how this machine will be graded; return "cuda" or "cpu".

    Without a GPU, Triton kernels run under the Triton interpreter, which has to be switched on
    before Triton is first imported: call this before ``import triton``.
    """
    from .grading import pick_device

    device = pick_device()
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
        from .interpreter import install_guard, patch_bf16_dot

        patch_bf16_dot()  # the interpreter's tl.dot is wrong for bfloat16 without it
        # A kernel that strays past a tensor would read or write this process's own memory: say so instead.
        install_guard()
        print("No GPU here: Triton runs under its interpreter (correctness is graded, speed needs a GPU); CuPy exercises need a GPU.")
    else:
        import torch

        print(f"GPU: {torch.cuda.get_device_name(0)}. Correctness and speed are graded on it.")
    return device
