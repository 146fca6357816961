"""The Triton interpreter made fit for grading: right bf16 dots, out-of-bounds accesses caught, launches recorded.

The interpreter keeps bfloat16 values as their 16-bit patterns (numpy has no bfloat16), and its
``tl.dot`` multiplies those patterns as if they were integers, so any bf16 matmul or attention
kernel gives nonsense on a CPU while the same kernel is right on a GPU (seen with Triton 3.9).
Widening the bf16 operands to float32 first (a bf16 value is the top half of a float32) gives the
products a GPU's tensor cores compute, exactly, with the float32 accumulation they use.

The interpreter also dereferences every address a kernel computes, in this very process: a tail
mask that is off by one reads or writes whatever lies past a tensor, and the run ends in a wrong
answer, a bogus error or a dead process, differently each time. ``install_guard`` checks every
load, store and atomic against the memory of the tensors passed to the launch before it happens,
and raises ``OutOfBoundsAccess`` with one stable sentence instead. ``record_launches`` notes which
kernels ran and which bytes they loaded and stored, so that a grader on a CPU can tell an output
the learner's kernels wrote from one that PyTorch wrote.
"""

from __future__ import annotations

import bisect
import ctypes
import inspect
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# An address this close to a tensor's edge is blamed on that tensor even when no lane of the same
# access lies inside it; farther out, which tensor is nearest depends on where the allocator put them.
NEAR_EDGE_BYTES = 4096


def patch_bf16_dot() -> bool:
    """Make the interpreter's ``tl.dot`` right for bfloat16 operands; True when the patch is in place."""
    modules = _interpreter_modules()
    if modules is None:
        return False
    tl, interpreter = modules
    builder = getattr(interpreter, "InterpreterBuilder", None)
    original = getattr(builder, "create_dot", None)
    if original is None:
        return False
    if getattr(original, "_bf16_widened", False):
        return True

    def widen(handle):
        if handle.dtype.scalar == tl.bfloat16:
            data = (handle.data.astype(np.uint32) << 16).view(np.float32)
            return interpreter.TensorHandle(data, tl.float32)
        return handle

    def create_dot(self, a, b, d, *args, **kwargs):
        return original(self, widen(a), widen(b), d, *args, **kwargs)

    create_dot._bf16_widened = True
    builder.create_dot = create_dot
    return True


def _interpreter_modules():
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return None
    return tl, interpreter


class OutOfBoundsAccess(Exception):
    """An interpreted kernel tried to touch memory outside the tensors passed to it; nothing was touched."""

    def __init__(self, message: str, kernel: str, access: str, argument: str | None, index: int | None, program_id: tuple):
        super().__init__(message)
        self.kernel = kernel
        self.access = access
        self.argument = argument
        self.index = index
        self.program_id = program_id


@dataclass(frozen=True)
class KernelSource:
    """A launched kernel: its name and where its Python source starts."""

    name: str
    file: str
    line: int


@dataclass
class _Argument:
    name: str
    start: int
    end: int
    itemsize: int


@dataclass
class _Launch:
    kernel: KernelSource
    arguments: list[_Argument] = field(default_factory=list)
    checked: bool = False
    # The union of the arguments' spans as disjoint sorted intervals [starts[i], ends[i]).
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    bounds: list[int] = field(default_factory=list)  # start, end, start, end, ... for bisect
    memory: list[np.ndarray] = field(default_factory=list)


_launches: list[_Launch] = []
_recorders: list[LaunchRecord] = []


def install_guard() -> bool:
    """Check every interpreted load, store and atomic against its launch's tensors; True when in place.

    Needs ``TRITON_INTERPRET=1``; a no-op without it or without Triton, and safe to call again.
    """
    modules = _interpreter_modules()
    if modules is None:
        return False
    _, interpreter = modules
    builder = interpreter.InterpreterBuilder
    executor = interpreter.GridExecutor
    if getattr(executor.__call__, "_bounds_guarded", False):
        return True
    originals = {
        "load": builder.create_masked_load,
        "store": builder.create_masked_store,
        "cas": builder.create_atomic_cas,
        "rmw": builder.create_atomic_rmw,
        "call": executor.__call__,
        "args": executor._init_args_hst,
    }

    def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
        access = _check(self, ptrs, mask, "read")
        result = originals["load"](self, ptrs, mask, other, *args, **kwargs)
        _note(access, loaded=True, stored=False)
        return result

    def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
        access = _check(self, ptrs, mask, "wrote")
        result = originals["store"](self, ptrs, value, mask, *args, **kwargs)
        _note(access, loaded=False, stored=True)
        return result

    def create_atomic_cas(self, ptr, cmp, val, *args, **kwargs):
        access = _check(self, ptr, None, "updated")
        result = originals["cas"](self, ptr, cmp, val, *args, **kwargs)
        _note(access, loaded=True, stored=True)
        return result

    def create_atomic_rmw(self, op, ptr, val, mask, *args, **kwargs):
        access = _check(self, ptr, mask, "updated")
        result = originals["rmw"](self, op, ptr, val, mask, *args, **kwargs)
        _note(access, loaded=True, stored=True)
        return result

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = originals["args"](self, args_dev, kwargs)
        if _launches:
            # The kernel dereferences the host copies' addresses (the same memory for CPU tensors).
            _bind(_launches[-1], self, args_hst, kwargs_hst)
        return args_hst, kwargs_hst

    def call(self, *args_dev, **kwargs):
        launch = _Launch(_kernel_source(self.fn, interpreter))
        for recorder in _recorders:
            recorder.launches.append(launch.kernel)
        _launches.append(launch)
        try:
            return originals["call"](self, *args_dev, **kwargs)
        except Exception as error:
            cause = _out_of_bounds_cause(error)
            if cause is None:
                raise
            raise cause from None
        finally:
            _launches.pop()

    call._bounds_guarded = True
    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    builder.create_atomic_cas = create_atomic_cas
    builder.create_atomic_rmw = create_atomic_rmw
    executor._init_args_hst = init_args_hst
    executor.__call__ = call
    return True


def _kernel_source(fn, interpreter) -> KernelSource:
    """The learner's function behind the interpreter's rewritten copy of it."""
    original = fn
    for source_fn, rewritten in interpreter.InterpretedFunction.rewritten_fn.items():
        if rewritten is fn:
            original = source_fn
            break
    code = getattr(original, "__code__", None)
    return KernelSource(getattr(original, "__name__", "kernel"), code.co_filename if code else "?", code.co_firstlineno if code else 0)


def _out_of_bounds_cause(error: BaseException) -> OutOfBoundsAccess | None:
    """The interpreter wraps a kernel's exceptions (once per device-function call): find ours."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OutOfBoundsAccess):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _tensors(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """Every object the interpreter turns into a pointer, named after the parameter it came in."""
    from triton.runtime.jit import TensorWrapper
    from triton.tools.tensor_descriptor import TensorDescriptor

    if isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _tensors(f"{name}[{i}]", item)
    elif isinstance(value, TensorDescriptor):
        yield from _tensors(name, value.base)
    elif isinstance(value, TensorWrapper):
        yield name, value.base
    elif hasattr(value, "data_ptr"):
        yield name, value


def _bind(launch: _Launch, executor, args_hst, kwargs_hst) -> None:
    """Note the spans of the launch's tensor arguments; a launch with an argument of unknown extent is not checked."""
    import torch

    from .arrays import memory_span

    try:
        named = inspect.getcallargs(executor.fn, *args_hst, **kwargs_hst)
    except TypeError:
        return  # the interpreter raises the same error itself
    for name, value in named.items():
        if name in executor.constexprs:
            continue
        for label, tensor in _tensors(name, value):
            if not isinstance(tensor, torch.Tensor):
                return
            start, end = memory_span(tensor)
            launch.arguments.append(_Argument(label, start, end, tensor.element_size()))
    intervals: list[list[int]] = []
    for start, end in sorted((a.start, a.end) for a in launch.arguments if a.end > a.start):
        if intervals and start <= intervals[-1][1]:
            intervals[-1][1] = max(intervals[-1][1], end)
        else:
            intervals.append([start, end])
    launch.starts = np.array([s for s, _ in intervals], dtype=np.uint64)
    launch.ends = np.array([e for _, e in intervals], dtype=np.uint64)
    launch.bounds = [bound for interval in intervals for bound in interval]
    launch.checked = True
    if _recorders:
        launch.memory = [np.ctypeslib.as_array((ctypes.c_uint8 * (e - s)).from_address(s)) for s, e in intervals]
        for recorder in _recorders:
            for start, end in intervals:
                recorder._cover(start, end)


@dataclass
class _Access:
    launch: _Launch
    addresses: np.ndarray
    itemsize: int
    interval: np.ndarray | int  # per lane, or one for all lanes


def _element_size(ptrs) -> int:
    pointee = ptrs.dtype.scalar.element_ty
    if pointee.is_ptr():
        return 8
    return max(1, pointee.primitive_bitwidth // 8)


def _check(builder, ptrs, mask, access: str) -> _Access | None:
    """Raise OutOfBoundsAccess unless every active lane's element lies inside one of the launch's tensors."""
    if not _launches or not _launches[-1].checked:
        return None
    launch = _launches[-1]
    addresses = np.asarray(ptrs.data, dtype=np.uint64)
    if mask is not None:
        addresses = addresses[np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)]
    addresses = addresses.reshape(-1)
    if addresses.size == 0:
        return None
    itemsize = _element_size(ptrs)
    # Nearly every access stays inside one tensor: its lowest and highest lanes settle it.
    low, high = int(addresses.min()), int(addresses.max())
    k = bisect.bisect_right(launch.bounds, low) - 1
    if k >= 0 and k % 2 == 0 and high + itemsize <= launch.bounds[k + 1]:
        return _Access(launch, addresses, itemsize, k // 2)
    interval = np.searchsorted(launch.starts, addresses, side="right").astype(np.int64) - 1
    inside = interval >= 0
    if len(launch.ends):
        ends = launch.ends[np.maximum(interval, 0)]
        inside &= (addresses < ends) & (ends - np.minimum(addresses, ends) >= itemsize)
    if not inside.all():
        raise _out_of_bounds(builder, launch, addresses, inside, itemsize, access)
    return _Access(launch, addresses, itemsize, interval)


def _out_of_bounds(builder, launch: _Launch, addresses, inside, itemsize: int, access: str) -> OutOfBoundsAccess:
    """One sentence that is the same on every run: positions relative to an argument, never raw addresses."""
    bad = int(addresses[np.argmin(inside)])
    good = addresses[inside]
    home = None
    if good.size:
        counts = [np.count_nonzero((good >= a.start) & (good < a.end)) for a in launch.arguments]
        if max(counts, default=0) > 0:
            home = launch.arguments[int(np.argmax(counts))]
    if home is None and launch.arguments:
        distance = [a.start - bad if bad < a.start else max(0, bad + itemsize - a.end) for a in launch.arguments]
        nearest = int(np.argmin(distance))
        if distance[nearest] < NEAR_EDGE_BYTES:
            home = launch.arguments[nearest]
    dims = max([1] + [d + 1 for d, n in enumerate(builder.grid_dim) if n > 1])
    program_id = tuple(int(i) for i in builder.grid_idx[:dims])
    kernel = launch.kernel.name
    advice = "mask the loads and stores at the edges"
    if home is None:
        message = f"your kernel {kernel} {access} memory outside every tensor passed to the kernel (program id {program_id}): {advice}"
        return OutOfBoundsAccess(message, kernel, access, None, None, program_id)
    index = (bad - home.start) // home.itemsize
    where = "before the start" if bad < home.start else "past the end"
    length = (home.end - home.start) // home.itemsize
    message = f"your kernel {kernel} {access} {where} of its argument {home.name} (element {index} of {length}; program id {program_id}): {advice}"
    return OutOfBoundsAccess(message, kernel, access, home.name, index, program_id)


def _note(access: _Access | None, loaded: bool, stored: bool) -> None:
    if access is None or not _recorders or not access.launch.memory:
        return
    launch = access.launch
    lanes = np.arange(access.itemsize, dtype=np.uint64)
    if isinstance(access.interval, int):
        groups = [(access.interval, access.addresses)]
    else:
        groups = [(int(k), access.addresses[access.interval == k]) for k in np.unique(access.interval)]
    for k, addresses in groups:
        byte_addresses = (addresses[:, None] + lanes).reshape(-1)
        values = launch.memory[k][(byte_addresses - launch.starts[k]).astype(np.int64)] if stored else None
        for recorder in _recorders:
            recorder._mark(byte_addresses, values, loaded)


@dataclass
class _Region:
    start: int
    stored: np.ndarray
    loaded: np.ndarray
    shadow: np.ndarray

    @property
    def end(self) -> int:
        return self.start + self.stored.size


class LaunchRecord:
    """What interpreted kernels did while ``record_launches`` was active, by address: ask about a tensor afterwards."""

    def __init__(self) -> None:
        self.launches: list[KernelSource] = []
        self._regions: list[_Region] = []

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
        found, _, loaded, _ = self._lookup(addresses)
        return float(np.count_nonzero(found & loaded)) / addresses.size

    def _cover(self, start: int, end: int) -> None:
        """Make one region hold [start, end), merging the regions it overlaps."""
        overlapping = [r for r in self._regions if r.start < end and start < r.end]
        if len(overlapping) == 1 and overlapping[0].start <= start and end <= overlapping[0].end:
            return
        low = min([start] + [r.start for r in overlapping])
        high = max([end] + [r.end for r in overlapping])
        size = high - low
        merged = _Region(low, np.zeros(size, bool), np.zeros(size, bool), np.zeros(size, np.uint8))
        for r in overlapping:
            at = slice(r.start - low, r.end - low)
            merged.stored[at], merged.loaded[at], merged.shadow[at] = r.stored, r.loaded, r.shadow
        self._regions = sorted([r for r in self._regions if r not in overlapping] + [merged], key=lambda r: r.start)

    def _locate(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts = np.array([r.start for r in self._regions], dtype=np.uint64)
        ends = np.array([r.end for r in self._regions], dtype=np.uint64)
        index = np.searchsorted(starts, addresses, side="right").astype(np.int64) - 1
        found = index >= 0
        if len(ends):
            found &= addresses < ends[np.maximum(index, 0)]
        return index, found

    def _mark(self, byte_addresses: np.ndarray, values: np.ndarray | None, loaded: bool) -> None:
        index, found = self._locate(byte_addresses)
        for k in np.unique(index[found]):
            region = self._regions[k]
            chosen = found & (index == k)
            offsets = (byte_addresses[chosen] - np.uint64(region.start)).astype(np.int64)
            if loaded:
                region.loaded[offsets] = True
            if values is not None:
                region.stored[offsets] = True
                region.shadow[offsets] = values[chosen]

    def _lookup(self, addresses: np.ndarray):
        index, found = self._locate(addresses)
        stored = np.zeros(addresses.size, bool)
        loaded = np.zeros(addresses.size, bool)
        shadow = np.zeros(addresses.size, np.uint8)
        for k in np.unique(index[found]):
            region = self._regions[k]
            chosen = found & (index == k)
            offsets = (addresses[chosen] - np.uint64(region.start)).astype(np.int64)
            stored[chosen], loaded[chosen], shadow[chosen] = region.stored[offsets], region.loaded[offsets], region.shadow[offsets]
        return found, stored, loaded, shadow


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


@contextmanager
def record_launches() -> Iterator[LaunchRecord]:
    """Record every interpreted launch inside the block (installing the guard if need be)."""
    record = LaunchRecord()
    install_guard()
    _recorders.append(record)
    try:
        yield record
    finally:
        _recorders.remove(record)
