"""What a library baseline actually runs on a device: SDPA's attention backends, float32 matmuls without TF32."""

from __future__ import annotations

import contextlib
import functools
import warnings

import torch

SDPA_LABELS = {
    "FLASH_ATTENTION": "SDPA flash backend",
    "EFFICIENT_ATTENTION": "SDPA memory-efficient backend",
    "CUDNN_ATTENTION": "cuDNN attention (SDPA)",
    "MATH": "SDPA math backend",
}


@contextlib.contextmanager
def _fp32_matmul(tf32: bool):
    matmul = torch.backends.cuda.matmul
    # torch >= 2.9: the new flag only; reading the legacy allow_tf32 after the new API was used raises
    # an error.
    name, value = ("fp32_precision", "tf32" if tf32 else "ieee") if hasattr(matmul, "fp32_precision") else ("allow_tf32", tf32)
    previous = getattr(matmul, name)
    setattr(matmul, name, value)
    try:
        yield
    finally:
        setattr(matmul, name, previous)


def ieee_fp32_matmul():
    """float32 matmuls in true float32 (TF32 off) inside the block; the previous setting comes back after."""
    return _fp32_matmul(tf32=False)


def tf32_matmul():
    """float32 matmuls on TF32 tensor cores (inputs rounded to 10 mantissa bits, float32 sums) inside
    the block; the previous setting comes back after."""
    return _fp32_matmul(tf32=True)


def sdpa(backend: str):
    """scaled_dot_product_attention restricted to one backend (a name of SDPBackend): it runs that
    backend or raises, never another one."""

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend)):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return run


def device_key(device) -> str:
    """"cuda" -> "cuda:0" (the current GPU), so that every spelling of one device is cached once."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return str(device)


@functools.cache
def _sdpa_runs(backend: str, device: str, head_dims: tuple[int, ...], dtype: torch.dtype) -> bool:
    try:
        # A backend that refuses warns why before it raises; a graded cell must keep stderr clean.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for head_dim in head_dims:
                x = torch.zeros(1, 1, 16, head_dim, device=device, dtype=dtype)
                for causal in (False, True):
                    sdpa(backend)(x, x, x, causal)
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        return True
    except RuntimeError:
        return False


def sdpa_runs(backend: str, device, head_dims: tuple[int, ...], dtype: torch.dtype = torch.bfloat16) -> bool:
    """Whether SDPA's ``backend`` runs on ``device`` for these head dims, with and without a causal
    mask: tried once per device on tiny inputs, which is what decides it (the chip, the build, the
    dtype, the head dim), not a table of compute capabilities."""
    return _sdpa_runs(backend, device_key(device), tuple(head_dims), dtype)


def first_sdpa_backend(device, preference: tuple[str, ...], head_dims: tuple[int, ...], dtype: torch.dtype = torch.bfloat16) -> str:
    """The first backend of ``preference`` that runs on the device; the math backend runs everywhere."""
    return next((b for b in preference if sdpa_runs(b, device, head_dims, dtype)), "MATH")


def describe_device(device) -> str:
    """"NVIDIA T4 (sm_75)" for a GPU, "this CPU" otherwise."""
    device = torch.device(device_key(device))
    if device.type != "cuda":
        return "this CPU"
    major, minor = torch.cuda.get_device_capability(device)
    return f"{torch.cuda.get_device_name(device)} (sm_{major}{minor})"
