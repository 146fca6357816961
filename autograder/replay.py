"""On a CPU: do the learner's kernels compute the answer from the inputs, or only carry one that code
outside them computed? NumPy, compiled code and plain Python are invisible to the profiler, and a
kernel that loads every input and stores a host-made answer looks, launch by launch, like honest work.

While a call runs, each launch of an interpreted kernel is kept with what code outside the kernels
wrote into the launch's tensors since a kernel last held them (all their bytes at a tensor's first
use: how it was allocated, zeroed or filled). The judge then hands over new values of the call's
inputs (its floating-point tensors from another seed, everything else as before); the worker puts
them into the inputs' memory, replays the launches in order with exactly those writes between them
and nothing else of the learner's code, and answers with what the output holds. Kernels that
compute from their inputs give the new answer; a host-made answer comes back as it was. The judge
compares it with the reference on the new inputs, and puts the inputs' first values back.

What the host wrote is known by the bytes it changed, so a write of the value already there (zeroing
a buffer where a kernel had left +0.0) is unseen, and replayed kernels would find their own new value
in its place. Where that replay's answer is wrong, the judge asks for a second reading: every tensor
argument the host changed at all is put back whole as the call had it before the launch (what zero_,
fill_ and copy_ do). Either reading carries only what the call held into the replay, never anything
of the new values, so a host-made answer comes back as it was under both.

What a replay cannot change: values the host read out of the inputs into a launch's scalar arguments
or its grid (they stay as they were), which is why only floating-point tensors change.
"""

from __future__ import annotations

import ctypes

import numpy as np


def _view(start: int, end: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * (end - start)).from_address(start))


class Replay:
    """The launches of one call, in order, each with the bytes host code wrote into its tensors
    before it (address, byte offsets, values)."""

    def __init__(self) -> None:
        # Per launch: the bytes the host changed and, for the second reading, the rest of every
        # argument it changed at all (each a list of address, byte offsets, values).
        self.launches: list[tuple[object, tuple, dict, list[tuple[int, np.ndarray, np.ndarray]], list[tuple[int, np.ndarray, np.ndarray]], tuple, object]] = []
        # What the tensors held when a kernel last finished with them: [(start, bytes)], disjoint.
        self._held: list[tuple[int, np.ndarray]] = []
        # A kernel launched with an argument that is not a tensor of known extent (no replay then).
        self.unfollowed: str | None = None

    def before(self, executor, args: tuple, kwargs: dict, launch, grid: tuple) -> None:
        """Keep one launch (an autograder.bounds.Launch, its tensors' memory known) about to run on
        ``grid``."""
        if not launch.checked:
            # An argument of unknown extent: what the host wrote there cannot be known.
            self.unfollowed = self.unfollowed or launch.kernel.name
            return
        writes, rewrites, intervals = [], [], []
        for start, end in zip(launch.starts.tolist(), launch.ends.tolist(), strict=True):
            now = _view(start, end)
            held, values = self._read(start, end)
            changed = ~held | (values != now)
            intervals.append((start, end, now, changed))
            if changed.any():
                offsets = np.flatnonzero(changed)
                writes.append((start, offsets, now[offsets].copy()))
        # Each argument that holds any bytes lies inside one of the intervals, their union.
        for argument in (a for a in launch.arguments if a.end > a.start):
            start, _, now, changed = next(i for i in intervals if i[0] <= argument.start and argument.end <= i[1])
            low, high = argument.start - start, argument.end - start
            if changed[low:high].any():
                kept = low + np.flatnonzero(~changed[low:high])
                rewrites.append((start, kept, now[kept].copy()))
        self.launches.append((executor, _plain(args), _plain(kwargs), writes, rewrites, grid, launch.sees))

    def after(self, launch) -> None:
        """``launch`` has run: what its tensors hold now is the kernels' state."""
        for start, end in zip(launch.starts.tolist(), launch.ends.tolist(), strict=True):
            self._write(start, _view(start, end).copy())

    def run(self, inputs: dict, new_inputs: dict, whole: bool = False) -> None:
        """Put ``new_inputs`` (same names, shapes and dtypes) into ``inputs``' memory and replay every
        launch with only the host's writes between them (``whole``: every argument the host changed
        put back whole): those into the inputs' own bytes are left
        out, the inputs holding their new values. ``inputs`` get their first values back afterwards,
        whatever happens. Run under ``interpreter.run_recorded(..., replaying=self)``: each launch's
        memory is checked against what this replay wrote and the kernels stored (``start``,
        ``finish``); anything else changing it sets ``tampered``."""
        import torch

        tensors = {name: value for name, value in inputs.items() if isinstance(value, torch.Tensor)}
        first = {name: value.clone() for name, value in tensors.items()}
        spans = [(value.data_ptr(), value.data_ptr() + _span(value)) for value in tensors.values() if value.numel()]
        self.known, self.tampered = Replay(), None
        try:
            with torch.no_grad():
                for name, value in tensors.items():
                    value.copy_(new_inputs[name])
                for low, high in spans:
                    self.known._write(low, _view(low, high).copy())
                for executor, args, kwargs, writes, rewrites, grid, sees in self.launches:
                    self.sees = sees
                    for start, offsets, values in writes + (rewrites if whole else []):
                        self._put(start, offsets, values, spans)
                    # The grid as it was, and no pre-run hook: no host code of the learner's runs.
                    executor.grid, executor.pre_run_hooks = grid, []
                    executor(*args, **kwargs)
        finally:
            with torch.no_grad():
                for name, value in tensors.items():
                    value.copy_(first[name])

    def _put(self, start: int, offsets: np.ndarray, values: np.ndarray, spans: list[tuple[int, int]]) -> None:
        """The host's bytes at ``start + offsets`` written again, except into the inputs' ``spans``."""
        if not offsets.size:
            return
        addresses = start + offsets
        outside = np.ones(offsets.size, bool)
        for low, high in spans:
            outside &= (addresses < low) | (addresses >= high)
        end = start + int(offsets[-1]) + 1
        _view(start, end)[offsets[outside]] = values[outside]
        held, now = self.known._read(start, end)
        now[offsets[outside]], held[offsets[outside]] = values[outside], True
        self.known._write(start, np.where(held, now, _view(start, end)))

    def start(self, launch) -> None:
        """A replayed launch begins (its pre-run code done): its memory must be what this replay put
        there; the kernel's view of it (``launch.image``) starts from that."""
        launch.image = []
        if launch.sees != self.sees:
            # Globals or helpers rebound since the call: the replay would run other code than it did.
            self.tampered = self.tampered or f"what {launch.kernel.name} can see (its globals, helpers) had changed since your call"
        for start, end in zip(launch.starts.tolist(), launch.ends.tolist(), strict=True):
            held, expected = self.known._read(start, end)
            now = _view(start, end)
            if not np.array_equal(now[held], expected[held]):
                self.tampered = self.tampered or f"code outside the kernels changed their memory before {launch.kernel.name} ran"
            launch.image.append(np.where(held, expected, now))

    def finish(self, launch) -> None:
        """A replayed launch ended: its memory must be what the kernel stored over what it began with."""
        for (start, end), image in zip(zip(launch.starts.tolist(), launch.ends.tolist(), strict=True), launch.image or (), strict=False):
            if not np.array_equal(_view(start, end), image):
                self.tampered = self.tampered or f"code outside the kernels changed their memory while {launch.kernel.name} ran"
            self.known._write(start, image.copy())

    def loaded(self, launch, k: int, offsets: np.ndarray, stored: np.ndarray | None) -> None:
        """A replayed kernel's access to interval ``k`` at byte ``offsets``: a load must find what the
        kernel's view holds; a store (``stored``, the bytes now there) updates it."""
        if stored is not None:
            launch.image[k][offsets] = stored
        elif not np.array_equal(launch.memory[k][offsets], launch.image[k][offsets]):
            self.tampered = self.tampered or f"code outside the kernels changed what {launch.kernel.name} loaded"

    def _read(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        held, values = np.zeros(end - start, bool), np.zeros(end - start, np.uint8)
        for low, data in self._held:
            lo, hi = max(low, start), min(low + data.size, end)
            if lo < hi:
                held[lo - start : hi - start] = True
                values[lo - start : hi - start] = data[lo - low : hi - low]
        return held, values

    def _write(self, start: int, data: np.ndarray) -> None:
        end, kept = start + data.size, []
        for low, old in self._held:
            high = low + old.size
            if high <= start or end <= low:
                kept.append((low, old))
                continue
            if low < start:
                kept.append((low, old[: start - low]))
            if end < high:
                kept.append((end, old[end - low :]))
        kept.append((start, data))
        self._held = kept


def probe_grid(replays: list[Replay], executor, args: tuple, kwargs: dict, launch, replaying: Replay | None) -> None:
    """Have each of ``replays`` keep the launch ``executor`` is about to make once the learner's host
    code inside it has run (Triton's interpreter runs the pre-run hooks, then the grid if it is a
    function, after the arguments are bound): what that code wrote is the host's, and the grid it
    gave is the one replayed. In a replay (``replaying``), the launch's memory is checked there."""
    learner_grid = executor.grid

    def resolved(named: dict):
        grid = learner_grid(named) if callable(learner_grid) else learner_grid
        for replay in replays:
            replay.before(executor, args, kwargs, launch, tuple(grid))
        if replaying is not None:
            replaying.start(launch)
        return grid

    executor.grid = resolved


def _plain(value):
    """A launch's arguments as built-in values (an int subclass's methods would run in the replay) and
    tensors as plain tensors."""
    import torch

    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if type(value) in (tuple, list):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, (bool, type(None))):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, torch.Tensor) and type(value) is not torch.Tensor:
        return value.as_subclass(torch.Tensor)
    return value


def _span(tensor) -> int:
    """The bytes from a tensor's first element to one past its last (strides may leave gaps)."""
    if tensor.numel() == 0:
        return 0
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True))
    return (last + 1) * tensor.element_size()
