"""What an interpreted Triton access may touch, and what the learner is told when it leaves it: the
memory of the tensors passed to the launch, checked lane by lane, and one sentence that names the
argument, the element and the program id, the same on every run."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

# An address this close to a tensor's edge is blamed on that tensor even when no lane of the same
# access lies inside it; farther out, which tensor is nearest depends on where the allocator put them.
NEAR_EDGE_BYTES = 4096


class OutOfBoundsAccess(Exception):
    """An interpreted kernel tried to touch memory outside the tensors passed to it; nothing was touched."""

    def __init__(self, message: str, kernel: str, access: str, argument: str | None, index: int | None, program_id: tuple):
        super().__init__(message)
        self.kernel = kernel
        self.access = access
        self.argument = argument
        self.index = index
        self.program_id = program_id


def out_of_bounds_cause(error: BaseException) -> OutOfBoundsAccess | None:
    """The interpreter wraps a kernel's exceptions (once per device-function call): find ours."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OutOfBoundsAccess):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


@dataclass(frozen=True)
class KernelSource:
    """A launched kernel: its name and where its Python source starts."""

    name: str
    file: str
    line: int


@dataclass
class Argument:
    name: str
    start: int
    end: int
    itemsize: int


@dataclass
class Launch:
    kernel: KernelSource
    arguments: list[Argument] = field(default_factory=list)
    checked: bool = False
    # The union of the arguments' spans as disjoint sorted intervals [starts[i], ends[i]).
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    bounds: list[int] = field(default_factory=list)  # start, end, start, end, ... for bisect
    memory: list[np.ndarray] = field(default_factory=list)
    # In a replay: what the kernel's memory must hold, interval by interval (autograder.replay).
    image: list[np.ndarray] | None = None
    # What the kernel can see (frontend_translation.visible): its globals, helpers, closure.
    sees: object = None


@dataclass
class Access:
    launch: Launch
    addresses: np.ndarray
    itemsize: int
    interval: np.ndarray | int  # per lane, or one for all lanes


def element_size(ptrs) -> int:
    pointee = ptrs.dtype.scalar.element_ty
    if pointee.is_ptr():
        return 8
    return max(1, pointee.primitive_bitwidth // 8)


def check(builder, launch: Launch, ptrs, mask, access: str) -> Access | None:
    """Raise OutOfBoundsAccess unless every active lane's element lies inside one of ``launch``'s tensors."""
    addresses = np.asarray(ptrs.data, dtype=np.uint64)
    if mask is not None:
        addresses = addresses[np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)]
    addresses = addresses.reshape(-1)
    if addresses.size == 0:
        return None
    itemsize = element_size(ptrs)
    # Nearly every access stays inside one tensor: its lowest and highest lanes settle it.
    low, high = int(addresses.min()), int(addresses.max())
    k = bisect.bisect_right(launch.bounds, low) - 1
    if k >= 0 and k % 2 == 0 and high + itemsize <= launch.bounds[k + 1]:
        return Access(launch, addresses, itemsize, k // 2)
    interval = np.searchsorted(launch.starts, addresses, side="right").astype(np.int64) - 1
    inside = interval >= 0
    if len(launch.ends):
        ends = launch.ends[np.maximum(interval, 0)]
        inside &= (addresses < ends) & (ends - np.minimum(addresses, ends) >= itemsize)
    if not inside.all():
        raise out_of_bounds(builder, launch, addresses, inside, itemsize, access)
    return Access(launch, addresses, itemsize, interval)


def out_of_bounds(builder, launch: Launch, addresses, inside, itemsize: int, access: str) -> OutOfBoundsAccess:
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
