"""The one setup call at the top of every exercise notebook, and CuPy for the notebooks that need it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

CUPY_INSTALL_GUIDE = "https://docs.cupy.dev/en/stable/install.html"


def setup(cupy: bool = False) -> str:
    """Pick the device and say how this machine will be graded; return "cuda" or "cpu".

    Without a GPU, Triton kernels run under the Triton interpreter, which has to be switched on
    before Triton is first imported: call this before ``import triton``. ``cupy=True`` (the CuPy
    exercises) also makes sure CuPy is there, as ``ensure_cupy`` does.
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
    if cupy:
        ensure_cupy()
    from .grading import inside_a_grading

    if not inside_a_grading():
        from . import sandbox

        # The first graded cell then finds its grader's processes started.
        sandbox.keep_ready(device)
    return device


def cupy_package(cuda_version: str | None) -> str | None:
    """The CuPy wheel built for a CUDA version ("12.4" -> "cupy-cuda12x"); None where there is none
    (no CUDA: a CPU build of torch; or a CUDA older than 11, for which CuPy ships no wheel)."""
    if not cuda_version:
        return None
    major = cuda_version.split(".")[0]
    if not major.isdigit() or int(major) < 11:
        return None
    return f"cupy-cuda{major}x"


def _torch_cuda() -> tuple[bool, str | None]:
    """Whether a GPU is visible, and the CUDA version torch was built for (None for a CPU build)."""
    try:
        import torch
    except ImportError:
        return False, None
    return torch.cuda.is_available(), torch.version.cuda


def ensure_cupy(install: bool = True) -> str:
    """Make CuPy importable where it can run, and print (and return) one sentence on what was done.

    CuPy needs an NVIDIA GPU and a wheel built for the CUDA major version of the runtime. Colab's GPU
    runtimes usually have it; where it is missing, the wheel matching the CUDA that torch was built
    for (``cupy-cuda12x`` for CUDA 12) is installed with pip. Without a GPU nothing is installed: the
    CuPy parts of a notebook say they need a GPU and are skipped (or, in an exercise, not graded).
    """
    if importlib.util.find_spec("cupy") is not None:
        message = "CuPy is installed."
    else:
        has_gpu, cuda_version = _torch_cuda()
        package = cupy_package(cuda_version)
        if not has_gpu:
            message = "No GPU here: CuPy kernels need an NVIDIA GPU, so CuPy is not installed and the CuPy parts need a GPU runtime."
        elif package is None:
            message = (
                f"CuPy is missing and torch's CUDA version ({cuda_version or 'none'}) has no CuPy wheel: "
                f"install the CuPy build for this machine's CUDA by hand ({CUPY_INSTALL_GUIDE})."
            )
        elif not install:
            message = f"CuPy is missing: install it with `pip install {package}` (the build for CUDA {cuda_version}, which torch uses)."
        else:
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], check=True)
            importlib.invalidate_caches()
            message = f"Installed {package}, the CuPy build for CUDA {cuda_version} (the CUDA version torch was built with)."
    print(message)
    return message
