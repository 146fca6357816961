"""Moving values across the boundary between the grader (torch tensors) and the learner's code
(torch tensors for Triton and Python exercises, CuPy arrays for CuPy exercises), without copies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


def to_learner(value: Any, language: str) -> Any:
    if isinstance(value, torch.Tensor) and language == "cupy":
        import cupy

        return cupy.from_dlpack(value)
    return value


@contextlib.contextmanager
def learner_allocations(language: str) -> Iterator[None]:
    """While a correctness case runs, CuPy allocates from PyTorch's caching allocator, so the canary
    the checker leaves there (``checking.poison``) lies under CuPy outputs too: an output that is
    never written reads as NaN, and a store past its last element changes the block's spare bytes.
    Triton and Python exercises allocate with torch already."""
    if language != "cupy":
        yield
        return
    import cupy

    with cupy.cuda.using_allocator(_torch_backed_allocation):
        yield


def _torch_backed_allocation(nbytes: int) -> Any:
    import cupy

    try:
        device_id = cupy.cuda.Device().id
        # At least one byte, so even an empty array has a real address; the block goes back to torch's
        # cache when CuPy drops the memory that owns it.
        block = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=f"cuda:{device_id}")
        memory = cupy.cuda.UnownedMemory(block.data_ptr(), nbytes, block, device_id)
        return cupy.cuda.MemoryPointer(memory, 0)
    except Exception:  # noqa: BLE001 -- torch out of memory or a CuPy API change: grade on CuPy's own pool
        return cupy.get_default_memory_pool().malloc(nbytes)


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


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
