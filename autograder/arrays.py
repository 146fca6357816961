"""Moving values across the boundary between the grader (torch tensors) and the learner's code
(torch tensors for Triton and Python exercises, CuPy arrays for CuPy exercises), without copies."""

from __future__ import annotations

from typing import Any

import torch


def to_learner(value: Any, language: str) -> Any:
    if isinstance(value, torch.Tensor) and language == "cupy":
        import cupy

        return cupy.from_dlpack(value)
    return value


def learner_output_type(language: str) -> str:
    return "cupy.ndarray" if language == "cupy" else "torch.Tensor"


def from_learner(out: Any, language: str) -> torch.Tensor:
    """The learner's output as a torch tensor sharing its memory, or TypeError saying what came back."""
    if language == "cupy":
        import cupy

        if not isinstance(out, cupy.ndarray):
            raise TypeError(f"expected a cupy.ndarray, got {_type_name(out)}")
        return torch.from_dlpack(out)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {_type_name(out)}")
    if type(out) is not torch.Tensor:
        # A Tensor subclass can defer work past the timer or fake its values.
        raise TypeError(f"expected a plain torch.Tensor, got the subclass {_type_name(out)}")
    return out


def _type_name(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__


def clone_preserving_strides(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        out = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)
        out.copy_(value)
        return out
    return value


def memory_span(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, one past the last byte] the tensor can touch."""
    if t.numel() == 0:
        return (t.data_ptr(), t.data_ptr())
    extent = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True) if size > 0)
    start = t.data_ptr()
    return (start, start + extent * t.element_size())


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device:
        return False
    a0, a1 = memory_span(a)
    b0, b1 = memory_span(b)
    return a0 < b1 and b0 < a1


def aliased_input(out: torch.Tensor, input_sets: list[dict]) -> str | None:
    """The name of an input (of any of ``input_sets``) that ``out`` shares memory with, if any."""
    for tensors in input_sets:
        for name, value in tensors.items():
            if hasattr(value, "data_ptr") and overlaps(out, value):
                return name
    return None


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
