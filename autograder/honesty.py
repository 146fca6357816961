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


def judge(kernels: list[str], allowed_library: tuple[str, ...]) -> tuple[bool, str]:
    allowed = re.compile("|".join(allowed_library)) if allowed_library else None
    library = [k for k in kernels if _LIBRARY.search(k)]
    forbidden = [k for k in library if not (allowed and allowed.search(k))]
    own = [k for k in kernels if not _LIBRARY.search(k)]
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
