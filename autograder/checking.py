"""Correctness: one case is one fresh input, the learner's answer against a float64 reference.

The tolerance is derived, not guessed: the library computes the same thing at the task's precision,
its largest error against the float64 reference is measured on these very inputs, and the learner
may be ``tolerance_factor`` times as far off, plus a few units in the last place of each value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from . import arrays

MISMATCHES_SHOWN = 5


@dataclass
class Tolerance:
    atol: float
    rtol: float
    library_max_error: float

    def allowed(self, reference: torch.Tensor) -> torch.Tensor:
        return self.atol + self.rtol * reference.abs()


@dataclass
class CaseResult:
    size: Any
    passed: bool
    message: str = ""
    max_error: float | None = None
    allowed_error: float | None = None
    mismatches: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["size"] = repr(self.size) if not isinstance(self.size, (int, float, str)) else self.size
        return d


def derive_tolerance(reference: torch.Tensor, library_out: torch.Tensor, dtype: torch.dtype, factor: float) -> Tolerance:
    eps = torch.finfo(dtype).eps
    ref = reference.double()
    library_error = float((library_out.double() - ref).abs().max()) if ref.numel() else 0.0
    largest = float(ref.abs().max()) if ref.numel() else 0.0
    atol = factor * max(library_error, eps * largest)
    return Tolerance(atol=atol, rtol=factor * eps, library_max_error=library_error)


def compare(out: torch.Tensor, reference: torch.Tensor, tol: Tolerance) -> tuple[bool, float, list]:
    """Elementwise |out - ref| <= atol + rtol*|ref|; NaN and Inf never pass where the reference is finite."""
    got = out.double()
    ref = reference.double()
    error = (got - ref).abs()
    ok = error <= tol.allowed(ref)
    ok &= torch.isfinite(got) | ~torch.isfinite(ref)
    if bool(ok.all()):
        return True, float(error.max()) if error.numel() else 0.0, []
    bad = (~ok).flatten().nonzero().flatten()[:MISMATCHES_SHOWN].tolist()
    mismatches = []
    for flat in bad:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), ref.shape)) if ref.dim() else ()
        mismatches.append(
            {
                "index": list(index),
                "got": float(got.flatten()[flat]),
                "expected": float(ref.flatten()[flat]),
                "allowed_error": float(tol.allowed(ref.flatten()[flat])),
            }
        )
    finite_error = error[torch.isfinite(error)]
    worst = float(finite_error.max()) if finite_error.numel() else float("nan")
    if not bool(torch.isfinite(got).all()):
        worst = float("nan")
    return False, worst, mismatches


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
    arrays.synchronize(device)
    poisoned = Poisoned(block.data_ptr(), nbytes, block_bytes)
    del block
    return poisoned


def wrote_past_the_end(out: torch.Tensor, poisoned: Poisoned | None) -> bool:
    """True when the output sits in the poisoned block and its spare bytes lost their canary: the
    kernel stored past the last element (a missing tail mask, a grid that overshoots)."""
    if poisoned is None or not out.is_cuda or out.data_ptr() != poisoned.ptr or poisoned.block_bytes == poisoned.nbytes:
        return False
    if poisoned.nbytes % 4:
        return False
    try:
        import cupy
    except ImportError:
        return False
    spare = poisoned.block_bytes - poisoned.nbytes
    memory = cupy.cuda.UnownedMemory(poisoned.ptr + poisoned.nbytes, spare, owner=out)
    tail = cupy.ndarray((spare // 4,), dtype=cupy.int32, memptr=cupy.cuda.MemoryPointer(memory, 0))
    return bool((tail != CANARY_BITS).any())


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
        tail = block[nbytes // 4 :]
        canary = torch.full_like(tail, CANARY_BITS).view(torch.uint8)
        return not torch.equal(tail.view(torch.uint8)[nbytes % 4 :], canary[nbytes % 4 :])


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


def check_case(problem, fn: Callable, size: Any, seed: int, device: str, reference_first: bool) -> CaseResult:
    inputs = problem.make_inputs(size, seed, device)
    originals = {k: arrays.clone_preserving_strides(v) for k, v in inputs.items()}
    out_dtype = getattr(torch, problem.out_dtype)

    def expected() -> tuple[torch.Tensor, torch.Tensor]:
        return problem.reference(**originals), problem.library(**originals)

    if reference_first:
        reference, library_out = expected()
    # CuPy code allocates guarded blocks; torch code gets the canary from the caching allocator.
    guarded = GuardedBlocks(device) if problem.language == "cupy" and device.startswith("cuda") else None
    poisoned = None if guarded else poison(reference.numel() if reference_first else _numel_hint(inputs), out_dtype, device)
    args = [arrays.to_learner(v, problem.language) for v in inputs.values()]
    with cupy_allocates_from(guarded) if guarded else contextlib.nullcontext():
        raw = fn(*args)
    arrays.synchronize(device)
    if not reference_first:
        reference, library_out = expected()
    arrays.synchronize(device)

    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and not torch.equal(value, originals[name]):
            return CaseResult(size, False, f"your function changed its input {name!r}; inputs must be left as they are")

    try:
        out = arrays.from_learner(raw, problem.language)
    except TypeError as exc:
        return CaseResult(size, False, f"wrong output type: {exc}")
    if out.device != reference.device:
        return CaseResult(size, False, f"output is on {out.device}, the inputs are on {reference.device}")
    if out.dtype != out_dtype:
        return CaseResult(size, False, f"output dtype is {out.dtype}, expected {out_dtype}")
    if tuple(out.shape) != tuple(reference.shape):
        return CaseResult(size, False, f"output shape is {tuple(out.shape)}, expected {tuple(reference.shape)}")
    if not out.is_contiguous():
        return CaseResult(size, False, f"output strides are {out.stride()}, expected a contiguous tensor")
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and arrays.overlaps(out, value):
            return CaseResult(size, False, f"output shares memory with the input {name!r}; return a new tensor")
    if guarded.wrote_past_the_end(out) if guarded else wrote_past_the_end(out, poisoned):
        return CaseResult(size, False, "your kernel wrote past the end of the output: mask the blocks at the edges (store only indices inside the output)")

    tol = derive_tolerance(reference, library_out, out_dtype, problem.tolerance_factor)
    ok, worst, mismatches = compare(out, reference, tol)
    allowed = tol.atol + tol.rtol * (float(reference.abs().max()) if reference.numel() else 0.0)
    if ok:
        return CaseResult(size, True, "", worst, allowed)
    return CaseResult(size, False, f"{_count_wrong(out, reference, tol)} wrong values", worst, allowed, mismatches)


def _count_wrong(out: torch.Tensor, reference: torch.Tensor, tol: Tolerance) -> str:
    got, ref = out.double(), reference.double()
    ok = ((got - ref).abs() <= tol.allowed(ref)) & (torch.isfinite(got) | ~torch.isfinite(ref))
    wrong = int((~ok).sum())
    return f"{wrong} of {ok.numel()}"


def _numel_hint(inputs: dict) -> int:
    tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
    return max((t.numel() for t in tensors), default=0)
