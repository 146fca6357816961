"""What interpreted Triton kernels did, byte by byte: which kernels ran, which bytes they loaded (and
how many times) and which they stored (with the value stored), so that a grader on a CPU can tell an
output the learner's kernels wrote from one that PyTorch wrote, and a kernel that reads its inputs
once from one that goes over them again. Filled in by autograder.interpreter's guard during
``interpreter.run_recorded``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .replay import Replay

if TYPE_CHECKING:
    from .bounds import KernelSource


# Load counts saturate here (one byte each): enough to tell one pass from several.
MAX_COUNT = 255


@dataclass
class _Region:
    start: int
    stored: np.ndarray
    loads: np.ndarray  # how many load instructions read each byte, up to MAX_COUNT
    shadow: np.ndarray

    @property
    def end(self) -> int:
        return self.start + self.stored.size


class LaunchRecord:
    """What interpreted kernels did during ``run_recorded``, by address: ask about a tensor afterwards."""

    def __init__(self) -> None:
        self.launches: list[KernelSource] = []
        # Each kernel that Triton's front end refused, with its reason (autograder.triton_frontend).
        self.compile_errors: dict[KernelSource, str] = {}
        self._regions: list[_Region] = []
        # The launches again, on other inputs, as the judge asks (autograder.replay).
        self.replay = Replay()

    def not_compiled(self, kernel: KernelSource, reason: str | None) -> None:
        """Note the front end's verdict on one launch of ``kernel`` (None: it compiles)."""
        if reason is not None:
            self.compile_errors.setdefault(kernel, reason)

    def kernels(self) -> list[KernelSource]:
        """Each kernel launched, once, in the order of first launch."""
        return list(dict.fromkeys(self.launches))

    def written_by_kernels(self, tensor) -> tuple[bool, bool]:
        """(every byte of ``tensor`` was stored by a kernel, every byte a kernel stored there still holds that value).

        The second is False when no kernel stored any byte of it. An empty tensor gives (True, True).
        """
        addresses, current = _tensor_bytes(tensor)
        if addresses.size == 0:
            return True, True
        found, stored, _, shadow = self._lookup(addresses)
        written = found & stored
        equal = bool(written.any()) and bool(np.array_equal(shadow[written], current[written]))
        return bool(written.all()), equal

    def read_fraction(self, tensor) -> float:
        """The fraction of ``tensor``'s bytes that a kernel loaded (atomics count as loads)."""
        addresses, _ = _tensor_bytes(tensor)
        if addresses.size == 0:
            return 0.0
        found, _, loads, _ = self._lookup(addresses)
        return float(np.count_nonzero(found & (loads > 0))) / addresses.size

    def most_loads(self, tensor) -> int:
        """The most times kernels loaded any one byte of ``tensor`` (one load instruction counts once
        for a byte, however many of its lanes point at it; atomics count as loads); 0 when none was."""
        if tensor.numel() == 0:
            return 0
        if tensor.is_contiguous():
            # The common case, without an address per byte: the slices of the regions it overlaps.
            start = tensor.data_ptr()
            end = start + tensor.numel() * tensor.element_size()
            slices = [r.loads[max(start, r.start) - r.start : min(end, r.end) - r.start] for r in self._regions if r.start < end and start < r.end]
            return max((int(s.max()) for s in slices if s.size), default=0)
        addresses, _ = _tensor_bytes(tensor)
        found, _, loads, _ = self._lookup(addresses)
        return int(loads[found].max()) if found.any() else 0

    def cover(self, start: int, end: int) -> None:
        """Make one region hold [start, end), merging the regions it overlaps."""
        overlapping = [r for r in self._regions if r.start < end and start < r.end]
        if len(overlapping) == 1 and overlapping[0].start <= start and end <= overlapping[0].end:
            return
        low = min([start] + [r.start for r in overlapping])
        high = max([end] + [r.end for r in overlapping])
        size = high - low
        merged = _Region(low, np.zeros(size, bool), np.zeros(size, np.uint8), np.zeros(size, np.uint8))
        for r in overlapping:
            at = slice(r.start - low, r.end - low)
            merged.stored[at], merged.loads[at], merged.shadow[at] = r.stored, r.loads, r.shadow
        self._regions = sorted([r for r in self._regions if r not in overlapping] + [merged], key=lambda r: r.start)

    def _locate(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts = np.array([r.start for r in self._regions], dtype=np.uint64)
        ends = np.array([r.end for r in self._regions], dtype=np.uint64)
        index = np.searchsorted(starts, addresses, side="right").astype(np.int64) - 1
        found = index >= 0
        if len(ends):
            found &= addresses < ends[np.maximum(index, 0)]
        return index, found

    def mark(self, byte_addresses: np.ndarray, values: np.ndarray | None, loaded: bool) -> None:
        index, found = self._locate(byte_addresses)
        for k in np.unique(index[found]):
            region = self._regions[k]
            chosen = found & (index == k)
            offsets = (byte_addresses[chosen] - np.uint64(region.start)).astype(np.int64)
            if loaded:
                # One more load of each byte: lanes of one instruction that share a byte write the
                # same count, so a broadcast load counts once.
                region.loads[offsets] = np.minimum(region.loads[offsets], MAX_COUNT - 1) + 1
            if values is not None:
                region.stored[offsets] = True
                region.shadow[offsets] = values[chosen]

    def _lookup(self, addresses: np.ndarray):
        index, found = self._locate(addresses)
        stored = np.zeros(addresses.size, bool)
        loads = np.zeros(addresses.size, np.uint8)
        shadow = np.zeros(addresses.size, np.uint8)
        for k in np.unique(index[found]):
            region = self._regions[k]
            chosen = found & (index == k)
            offsets = (addresses[chosen] - np.uint64(region.start)).astype(np.int64)
            stored[chosen], loads[chosen], shadow[chosen] = region.stored[offsets], region.loads[offsets], region.shadow[offsets]
        return found, stored, loads, shadow


def _tensor_bytes(tensor) -> tuple[np.ndarray, np.ndarray]:
    """The address of every byte of every element of a CPU tensor, with its current value, in the same order."""
    import torch

    if tensor.device.type != "cpu":
        raise ValueError("a launch record answers for CPU tensors (the interpreter's own memory)")
    itemsize = tensor.element_size()
    offsets = np.zeros((), dtype=np.int64)
    for size, stride in zip(tensor.shape, tensor.stride(), strict=True):
        offsets = np.add.outer(offsets, np.arange(size, dtype=np.int64) * stride)
    element_addresses = (tensor.data_ptr() + offsets.reshape(-1) * itemsize).astype(np.uint64)
    addresses = (element_addresses[:, None] + np.arange(itemsize, dtype=np.uint64)).reshape(-1)
    current = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    return addresses, current


class LaunchSummary:
    """The interpreter's record of one call (``interpreter.run_recorded``), reduced to the facts the
    judge needs on a CPU."""

    def __init__(self, record: LaunchRecord) -> None:
        self.record = record

    def summary(self, out, module_path: str | None, inputs: dict | None = None) -> dict:
        """What the call's kernels did: their names, how many launches, whether the output is what
        they stored, what share of each floating-point input of ``inputs`` (the call's arguments by
        name) they loaded (the data an answer is computed from; index and metadata tensors may be
        read on the host), and each tensor's most loaded byte (``most_reads``, for exercises that
        bound how often an input may be read), and why Triton's front end refused any of them
        (``compile_errors``)."""
        stored, equal = self.record.written_by_kernels(out)
        # A kernel defined outside the learner's file is named with its file, so that no name of
        # theirs can match it.
        here = os.path.realpath(module_path) if module_path else None

        def shown(k: KernelSource) -> str:
            return k.name if os.path.realpath(k.file) == here else f"{k.name} (from {os.path.basename(k.file)})"

        return {
            "kernels": sorted({shown(k) for k in self.record.kernels()}),
            "launches": len(self.record.launches),
            "compile_errors": {shown(k): reason for k, reason in self.record.compile_errors.items()},
            "output_stored": bool(stored),
            "output_is_what_was_stored": bool(equal),
            "inputs_read": {
                name: round(self.record.read_fraction(value), 4)
                for name, value in (inputs or {}).items()
                if getattr(value, "is_floating_point", lambda: False)() and value.numel() > 0
            },
            "most_reads": {name: self.record.most_loads(value) for name, value in (inputs or {}).items() if hasattr(value, "data_ptr")},
        }
