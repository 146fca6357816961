"""Whose kernel did the work? The profiler lists every kernel one call launches; the call must launch
at least one kernel of the learner's own and no library kernel that computes the answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

# Kernels that come from a library rather than from the learner's Triton or CUDA source.
LIBRARY_KERNEL_PATTERNS = (
    r"at::native",
    r"at::cuda",
    r"\bc10::",
    r"cublas",
    r"cutlass",
    r"cudnn",
    r"nvjet",
    r"gemm",
    r"gemv",
    r"xmma",
    r"flash",
    r"fmha",
    r"^void (sm\d+|ampere|hopper|turing|volta)_",
    r"^(sm\d+|ampere|hopper|turing|volta)_",
    r"^cupy_",
    r"cub::",
    r"thrust::",
    r"elementwise_kernel",
    r"reduce_kernel",
)
_LIBRARY = re.compile("|".join(LIBRARY_KERNEL_PATTERNS), re.IGNORECASE)
# Marks only a library's compiled kernel carries (C++ namespaces, cuBLAS/cuDNN/CUTLASS families,
# architecture-prefixed SASS kernels): a learner's kernel named like this is not taken as theirs.
_UNMISTAKABLY_LIBRARY = re.compile(r"::|^void |cublas|cutlass|cudnn|nvjet|xmma|^(sm\d+|ampere|hopper|turing|volta)_", re.IGNORECASE)

_TRITON_KERNEL = re.compile(r"@\s*(?:triton\s*\.\s*)?(?:jit|autotune|heuristics)\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")
_CUDA_KERNEL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)")


def own_kernel_names(code: str) -> set[str]:
    """Names of the kernels the learner's code defines: Triton-decorated functions and CUDA
    ``__global__`` functions in its source strings. A kernel of the learner's may then carry a name
    such as ``flash_attention_kernel`` or ``sgemm_kernel`` without being taken for a library's."""
    names = set(_TRITON_KERNEL.findall(code)) | set(_CUDA_KERNEL.findall(code))
    return {n for n in names if not _UNMISTAKABLY_LIBRARY.search(n)}


_MANGLED = re.compile(r"^_Z(\d+)")


def _base_name(kernel: str) -> str:
    """The function's own name in a profiler entry: ``sgemm(float const*, ...)``, a C++-mangled
    ``_Z5sgemmPKfS0_Pf`` and a plain ``sgemm`` all give ``sgemm``."""
    mangled = _MANGLED.match(kernel)
    if mangled:
        start = mangled.end()
        return kernel[start : start + int(mangled.group(1))]
    return re.split(r"[(<\s]", kernel.strip(), maxsplit=1)[0]


def _is_library(kernel: str, own: set[str]) -> bool:
    if _base_name(kernel) in own and not _UNMISTAKABLY_LIBRARY.search(kernel):
        return False
    return bool(_LIBRARY.search(kernel))
_NOT_KERNELS = re.compile(r"^(Memcpy|Memset|cudaMemcpy|cudaMemset)", re.IGNORECASE)


def launched_kernels(call: Callable[[], Any]) -> list[str]:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = call()
        torch.cuda.synchronize()
    del out
    names = []
    for event in prof.events():
        if event.device_type == DeviceType.CUDA and not _NOT_KERNELS.match(event.name):
            names.append(event.name)
    return names


def judge(kernels: list[str], allowed_library: tuple[str, ...], own_names: set[str] = frozenset()) -> tuple[bool, str]:
    allowed = re.compile("|".join(allowed_library)) if allowed_library else None
    library = [k for k in kernels if _is_library(k, set(own_names))]
    forbidden = [k for k in library if not (allowed and allowed.search(k))]
    own = [k for k in kernels if not _is_library(k, set(own_names))]
    if forbidden:
        shown = "; ".join(sorted(set(_short(k) for k in forbidden))[:3])
        return False, f"the timed call launched library kernels that do the work: {shown}. Write the kernel yourself."
    if not own:
        return False, "the profiler saw no kernel of yours during the call; the work must run in your own kernel"
    return True, "kernels launched: " + ", ".join(sorted(set(_short(k) for k in own)))


def _short(name: str, limit: int = 90) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


# Without a GPU, the same question is asked of the ATen operators the call ran: the Triton
# interpreter only allocates and copies, so any arithmetic operator means the library did the work.
CPU_BOOKKEEPING_OPS = re.compile(
    r"^aten::(empty|empty_like|empty_strided|new_empty|new_empty_strided|set_|copy_|_to_copy|to|clone|"
    r"zeros|zeros_like|zero_|fill_|full|full_like|new_zeros|view|reshape|_reshape_alias|as_strided|"
    r"contiguous|detach|alias|lift_fresh|resolve_conj|resolve_neg|expand|t|transpose|permute|unsqueeze|"
    r"squeeze|flatten|select|slice|item|_local_scalar_dense|is_nonzero|numel|size|stride|result_type)$"
)


def cpu_operators(call: Callable[[], Any]) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = call()
    del out
    return [e.name for e in prof.events() if e.name.startswith("aten::")]


def judge_cpu(operators: list[str]) -> tuple[bool, str]:
    computing = sorted({op for op in operators if not CPU_BOOKKEEPING_OPS.match(op)})
    if computing:
        return False, f"the call ran PyTorch operators that compute the answer ({', '.join(computing[:5])}); write the kernel yourself"
    return True, "no library operator computed the answer"
