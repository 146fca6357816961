"""The Triton interpreter made fit for grading: right bf16 dots, out-of-bounds accesses caught, launches recorded.

The interpreter keeps bfloat16 values as their 16-bit patterns and its ``tl.dot`` multiplies them
as integers (Triton 3.9): widened to float32 first (a bf16 value is a float32's top half), the
products are a GPU's tensor cores', exactly, with their float32 accumulation.

The interpreter also dereferences every address a kernel computes, in this very process: a tail
mask that is off by one reads or writes whatever lies past a tensor, and the run ends in a wrong
answer, a bogus error or a dead process, differently each time. ``install_guard`` checks every
load, store and atomic against the memory of the tensors passed to the launch before it happens,
and raises ``OutOfBoundsAccess`` with one stable sentence instead. ``run_recorded`` notes which
kernels ran and which bytes they loaded and stored, so that a grader on a CPU can tell an output
the learner's kernels wrote from one that PyTorch wrote (autograder.launch_record), and whether
Triton's front end compiles each of them for a GPU (autograder.triton_frontend).
"""

from __future__ import annotations

import ctypes
import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import bounds, replay, rewrites, triton_frontend
from .bounds import Access, Argument, KernelSource, Launch
from .frontend_translation import visible
from .launch_record import LaunchRecord


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


# What install_guard replaced, bound here as functions (so the seal's fingerprint sees a rebinding).
_interpreter = _original_load = _original_store = _original_cas = _original_rmw = _original_call = _original_args = None


def install_guard() -> bool:
    """Check every interpreted load, store and atomic against its launch's tensors; True when in place.

    Needs ``TRITON_INTERPRET=1``; a no-op without it or without Triton, and safe to call again.
    """
    global _interpreter, _original_load, _original_store, _original_cas, _original_rmw, _original_call, _original_args
    modules = _interpreter_modules()
    if modules is None:
        return False
    _, interpreter = modules
    builder = interpreter.InterpreterBuilder
    executor = interpreter.GridExecutor
    if executor.__call__ is _graded_call:
        return True
    _interpreter = interpreter
    _original_load, _original_store = builder.create_masked_load, builder.create_masked_store
    _original_cas, _original_rmw = builder.create_atomic_cas, builder.create_atomic_rmw
    _original_call, _original_args = executor.__call__, executor._init_args_hst
    triton_frontend.restore_language_after_device_calls(interpreter)
    builder.create_masked_load = _graded_load
    builder.create_masked_store = _graded_store
    builder.create_atomic_cas = _graded_cas
    builder.create_atomic_rmw = _graded_rmw
    executor._init_args_hst = _graded_args
    executor.__call__ = _graded_call
    return True


def run_recorded(fn, *args, check=None, replaying=None) -> tuple[Any, LaunchRecord]:
    """``fn(*args)`` and the record of every kernel it launched; ``check`` (the seal's) runs before each
    launch (a patch undone before the reply is seen too). Record and front end are held by this frame
    alone, found by the hooks up their stack (``_launch_states``): nothing the learner can name leads to them.
    ``replaying``: the autograder.replay.Replay whose ``run`` this is (it checks each launch's memory)."""
    install_guard()
    record, front_end, verified = LaunchRecord(), triton_frontend.FrontEnd(), {}  # noqa: F841 -- the hooks read them from this frame
    return fn(*args), record


def _launch_states(holder: str) -> list[dict]:
    """The locals of this module's ``holder`` frames, nearest first, for its hooks only (the seal's consumer)."""
    here = sys._getframe()
    own = here.f_code.co_filename
    caller = here.f_back
    if caller is None or caller.f_code.co_filename != own:
        return []
    frame, found = caller.f_back, []
    while frame is not None:
        if frame.f_code.co_name == holder and frame.f_code.co_filename == own:
            found.append(frame.f_locals)
        frame = frame.f_back
    return found


def _graded_call(self, *args_dev, **kwargs):
    """GridExecutor.__call__ under the guard: one launch, its kernel noted in the record (if any)."""
    function = _original_function(self.fn, _interpreter)
    launch = Launch(_kernel_source(function))
    # Every recording on the stack hears of the launch: one the learner's code nests in the
    # worker's must not hide a kernel from it. The outermost is the worker's.
    recordings = _launch_states("run_recorded")
    records = [recording["record"] for recording in recordings]
    if recordings:
        for recording in recordings:
            if recording["check"] is not None:
                recording["check"]()
            recording["record"].launches.append(launch.kernel)
        sees = launch.sees = visible(function, set())  # noqa: F841 -- read by the hooks from this frame
        # A GPU runs only what Triton's compiler accepts; the interpreter runs any Python.
        unfit = rewrites.forged(_interpreter, self.fn, recordings[-1]["verified"]) or recordings[-1]["front_end"].compile_error(function, args_dev, kwargs)
        for record in records:
            record.not_compiled(launch.kernel, unfit)
        replay.probe_grid([record.replay for record in records], self, args_dev, kwargs, launch, replaying := recordings[-1]["replaying"])
    try:
        returned = _original_call(self, *args_dev, **kwargs)
        for record in records:
            record.replay.after(launch)
        if recordings and replaying is not None:
            replaying.finish(launch)
        return returned
    except Exception as error:
        cause = bounds.out_of_bounds_cause(error)
        if cause is None:
            raise
        raise cause from None


def _graded_args(self, args_dev, kwargs):
    args_hst, kwargs_hst = _original_args(self, args_dev, kwargs)
    for state in _launch_states("_graded_call")[:1]:
        # The kernel dereferences the host copies' addresses (the same memory for CPU tensors).
        _bind(state["launch"], state["records"], self, args_hst, kwargs_hst)
    return args_hst, kwargs_hst


def _graded_load(self, ptrs, mask, other, *args, **kwargs):
    return _guarded(self, ptrs, mask, "read", (True, False), lambda: _original_load(self, ptrs, mask, other, *args, **kwargs))


def _graded_store(self, ptrs, value, mask, *args, **kwargs):
    return _guarded(self, ptrs, mask, "wrote", (False, True), lambda: _original_store(self, ptrs, value, mask, *args, **kwargs))


def _graded_cas(self, ptr, cmp, val, *args, **kwargs):
    return _guarded(self, ptr, None, "updated", (True, True), lambda: _original_cas(self, ptr, cmp, val, *args, **kwargs))


def _graded_rmw(self, op, ptr, val, mask, *args, **kwargs):
    return _guarded(self, ptr, mask, "updated", (True, True), lambda: _original_rmw(self, op, ptr, val, mask, *args, **kwargs))


def _guarded(builder, ptrs, mask, access: str, loads_stores: tuple[bool, bool], run):
    """One memory operation of the current launch: checked against its tensors, run, then recorded."""
    state = (_launch_states("_graded_call") or [None])[0]
    checked = _check(builder, state, ptrs, mask, access)
    result = run()
    _note(state, checked, loaded=loads_stores[0], stored=loads_stores[1])
    return result


def _original_function(fn, interpreter):
    """The learner's function behind the interpreter's rewritten copy of it."""
    for source_fn, rewritten in interpreter.InterpretedFunction.rewritten_fn.items():
        if rewritten is fn:
            return source_fn
    return fn


def _kernel_source(function) -> KernelSource:
    code = getattr(function, "__code__", None)
    return KernelSource(getattr(function, "__name__", "kernel"), code.co_filename if code else "?", code.co_firstlineno if code else 0)


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


def _bind(launch: Launch, records: list[LaunchRecord], executor, args_hst, kwargs_hst) -> None:
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
            launch.arguments.append(Argument(label, start, end, tensor.element_size()))
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
    if records:
        launch.memory = [np.ctypeslib.as_array((ctypes.c_uint8 * (e - s)).from_address(s)) for s, e in intervals]
        for record in records:
            for start, end in intervals:
                record.cover(start, end)


def _check(builder, state: dict | None, ptrs, mask, access: str) -> Access | None:
    """Raise OutOfBoundsAccess unless every active lane's element lies inside one of the current launch's tensors."""
    if state is None:
        return None
    # What the verdict saw, at every load and store: a thread can change a global the kernel reads.
    if state.get("sees") is not None and visible(state["function"], set()) != state["sees"]:
        for record in state["records"]:
            record.not_compiled(state["launch"].kernel, "a global it reads changed while it ran")
    if not state["launch"].checked:
        return None
    return bounds.check(builder, state["launch"], ptrs, mask, access)


def _note(state: dict | None, access: Access | None, loaded: bool, stored: bool) -> None:
    records = state["records"] if state is not None else []
    if access is None or not records or not access.launch.memory:
        return
    launch = access.launch
    lanes = np.arange(access.itemsize, dtype=np.uint64)
    if isinstance(access.interval, int):
        groups = [(access.interval, access.addresses)]
    else:
        groups = [(int(k), access.addresses[access.interval == k]) for k in np.unique(access.interval)]
    for k, addresses in groups:
        byte_addresses = (addresses[:, None] + lanes).reshape(-1)
        offsets = (byte_addresses - launch.starts[k]).astype(np.int64)
        values = launch.memory[k][offsets] if stored else None
        for record in records:
            record.mark(byte_addresses, values, loaded)
        if launch.image is not None:
            state["replaying"].loaded(launch, k, offsets, values)
