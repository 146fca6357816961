"""Canaries in the worker: memory the learner's code will allocate is filled with a NaN no arithmetic
produces, so an output that is never written reads as NaN and a store past its end is seen.

These catch bugs (a missing tail mask, a grid one block too large), not cheats: a learner gains
nothing by hiding a store past the end, and every answer is judged by the judge from the bytes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

# A quiet NaN with a payload no arithmetic produces: unwritten memory reads as NaN, and a canary
# still in place after the call proves nothing wrote there.
CANARY_BITS = 0x7FC0DEAD
# PyTorch's caching allocator hands out blocks in multiples of 512 bytes.
ALLOCATOR_ROUNDING = 512


@dataclass
class Poisoned:
    ptr: int
    nbytes: int
    block_bytes: int
    # Whether the output's own allocation was the call's only one in the block (from the allocator's
    # history); None: not known.
    sole_tenant: bool | None = None


def poison(numel: int, dtype: torch.dtype, device: str) -> Poisoned | None:
    """Leave canary NaNs in the memory the next allocation of this size will get from the caching
    allocator, so an output the learner allocates but never writes reads as NaN, never as an old
    answer, and a write past its end shows in the block's spare bytes."""
    if numel <= 0:
        return None
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = numel * itemsize
    block_bytes = -(-nbytes // ALLOCATOR_ROUNDING) * ALLOCATOR_ROUNDING
    block = torch.full((block_bytes // 4,), CANARY_BITS, dtype=torch.int32, device=device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    poisoned = Poisoned(block.data_ptr(), nbytes, block_bytes)
    del block
    return poisoned


def wrote_past_the_end(out: torch.Tensor, poisoned: Poisoned | None) -> bool:
    """True when the output sits in the poisoned block and its spare bytes lost their canary: the
    kernel stored past the last element (a missing tail mask, a grid that overshoots)."""
    if poisoned is None or not out.is_cuda or out.data_ptr() != poisoned.ptr or poisoned.block_bytes == poisoned.nbytes:
        return False
    # A temporary the call allocated there before its output, or a larger buffer the output is a view
    # of, may write the spare bytes legitimately: then the canary tells nothing.
    if poisoned.sole_tenant is False:
        return False
    if poisoned.nbytes % 4:
        return False
    from . import cuda_driver

    spare = poisoned.block_bytes - poisoned.nbytes
    tail = cuda_driver.as_tensor(poisoned.ptr + poisoned.nbytes, spare, torch.int32, (spare // 4,), (1,), owner=out)
    return _changed(tail, 0)


def _changed(words: torch.Tensor, skip_bytes: int) -> bool:
    """Whether any canary word (from byte ``skip_bytes`` of the first) was overwritten. Compared on
    the host after a plain copy: a check that launched kernels would show in the profile of the
    learner's calls."""
    got = words.cpu().view(torch.uint8)[skip_bytes:]
    expected = torch.full((words.numel(),), CANARY_BITS, dtype=torch.int32).view(torch.uint8)[skip_bytes:]
    return not torch.equal(got, expected)


# Bytes of canary after every block handed to CuPy code: a grid one row of blocks too tall writes a
# row of the output past its end (1823 x 781 floats in 8-row blocks: 3,124 bytes).
GUARD_BYTES = 4096


class GuardedBlocks:
    """The memory CuPy code allocates while one correctness case runs. Each block is the size asked
    for plus GUARD_BYTES, all filled with canary words: an output that is never written reads as
    NaN, and a store past its last byte changes the guard. Unlike the poisoned block of
    :func:`poison`, this does not depend on which block the caching allocator hands out. The blocks
    are kept until the case is over, so the guard of a freed temporary is never reused."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._blocks: dict[int, tuple[torch.Tensor, int]] = {}

    def allocate(self, nbytes: int) -> torch.Tensor:
        words = -(-nbytes // 4) + GUARD_BYTES // 4
        block = torch.full((words,), CANARY_BITS, dtype=torch.int32, device=self.device)
        self._blocks[block.data_ptr()] = (block, nbytes)
        return block

    def wrote_past_the_end(self, out: torch.Tensor) -> bool | None:
        """Whether anything changed the bytes after the block that holds ``out``; None when
        ``out`` does not start one of these blocks."""
        found = self._blocks.get(out.data_ptr())
        if found is None:
            return None
        block, nbytes = found
        # From the word that holds the last byte on: the guard, without copying the output itself.
        return _changed(block[nbytes // 4 :], nbytes % 4)


@contextlib.contextmanager
def cupy_allocates_from(blocks: GuardedBlocks) -> Iterator[None]:
    """Route CuPy's allocations in this thread to ``blocks`` (CuPy arrays over torch memory)."""
    import cupy

    device_id = cupy.cuda.Device().id

    def allocate(nbytes: int):
        block = blocks.allocate(nbytes)
        # The block owns the memory: CuPy keeps it alive as long as an array uses it.
        memory = cupy.cuda.UnownedMemory(block.data_ptr(), nbytes, block, device_id)
        return cupy.cuda.MemoryPointer(memory, 0)

    with cupy.cuda.using_allocator(allocate):
        yield


class Guard:
    """The canaries of one correctness call in the worker: guarded blocks for CuPy's allocations, or
    a poisoned block where torch's caching allocator will put the output. On a CPU the Triton
    interpreter's own bounds checks (autograder.interpreter) stand in for them."""

    def __init__(self, language: str, device: str, out_numel: int, out_dtype: str | None) -> None:
        self.device = device
        self.blocks = GuardedBlocks(device) if language == "cupy" and device == "cuda" else None
        self.poisoned = None
        if device == "cuda" and self.blocks is None and out_numel:
            self.poisoned = poison(out_numel, getattr(torch, out_dtype or "float32"), device)
        self._routing = None

    def __enter__(self):
        if self.blocks is not None:
            self._routing = cupy_allocates_from(self.blocks)
            self._routing.__enter__()
        if self.poisoned is not None:
            _record_allocations(True)
        return self

    def __exit__(self, *exc):
        if self._routing is not None:
            self._routing.__exit__(*exc)
        if self.poisoned is not None:
            self.poisoned.sole_tenant = _sole_tenant(self.poisoned)
            _record_allocations(False)
        return False

    def settle(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def wrote_past_the_end(self, out: torch.Tensor) -> bool:
        if self.blocks is not None:
            return bool(self.blocks.wrote_past_the_end(out))
        return wrote_past_the_end(out, self.poisoned)


def _record_allocations(on: bool) -> None:
    """The caching allocator's history of allocations (no stacks: cheap), on for one correctness call."""
    try:
        torch.cuda.memory._record_memory_history(enabled="all" if on else None, context=None, stacks="python", max_entries=100_000, clear_history=on)
    except (AttributeError, RuntimeError, TypeError):
        pass


def _sole_tenant(poisoned: Poisoned) -> bool | None:
    """Whether the call made exactly one allocation overlapping the poisoned block, starting at it and
    no larger than it (the output's); None if the history cannot be read."""
    try:
        traces = torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]
    except (AttributeError, RuntimeError, KeyError, IndexError, TypeError):
        return None
    end = poisoned.ptr + poisoned.block_bytes
    tenants = [t for t in traces if t.get("action") == "alloc" and t["addr"] < end and t["addr"] + t["size"] > poisoned.ptr]
    return len(tenants) == 1 and tenants[0]["addr"] == poisoned.ptr and tenants[0]["size"] <= poisoned.block_bytes
