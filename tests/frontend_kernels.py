"""Kernels for tests/test_triton_frontend.py, run in a fresh process under the Triton interpreter:
``python tests/frontend_kernels.py`` prints one JSON line of what Triton's front end said of each."""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import time

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from autograder import interpreter, own_compile, triton_frontend  # noqa: E402
from autograder.launch_record import LaunchSummary  # noqa: E402

N = 1000


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def numpy_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x.handle.data = np.add(x.handle.data, tl.load(y_ptr + offsets, mask=mask).handle.data)
    tl.store(out_ptr + offsets, x, mask=mask)


@triton.jit
def numpy_when_big_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Honest Triton for the small block, NumPy for the big one: each specialization is compiled."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if BLOCK_SIZE > 256:
        x.handle.data = np.add(x.handle.data, y.handle.data)
    else:
        x = x + y
    tl.store(out_ptr + offsets, x, mask=mask)


@triton.jit
def runtime_arange_kernel(x_ptr, out_ptr, n_elements):
    """tl.arange needs constexpr bounds on a GPU; the interpreter takes any integer."""
    offsets = tl.arange(0, n_elements)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))


@triton.jit
def scaled(x, factor):
    return tl.sigmoid(x) * factor


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """A helper of the learner's and triton.language's jitted functions, as a function and as a method."""
    offsets = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
    total = tl.sum(x, axis=0) + x.sum(axis=0) + tl.max(x, 0) + tl.cdiv(n_elements, 2)
    tl.store(out_ptr, scaled(total, 2.0))


@triton.jit
def activation_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, ACTIVATION: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, ACTIVATION(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


LIBRARY = """
import triton


@triton.jit
def library_scale(x):
    return x * 3.0
"""


def load_library():
    """A module of another file, as a library's would be."""
    path = os.path.join(tempfile.mkdtemp(), "some_library.py")
    with open(path, "w") as f:
        f.write(LIBRARY)
    spec = importlib.util.spec_from_file_location("some_library", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


library_scale = load_library().library_scale


@triton.jit
def calls_library_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """A kernel of this file whose body inlines a Triton function of another file: library work,
    although it compiles."""
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, library_scale(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


def make_activation(with_numpy: bool):
    """Two jitted functions of one name: an honest ReLU, or one that runs NumPy."""
    if with_numpy:

        @triton.jit
        def activation(x):
            x.handle.data = np.maximum(x.handle.data, 0)
            return x

    else:

        @triton.jit
        def activation(x):
            return tl.maximum(x, 0.0)

    return activation


def _grid(n: int, block: int) -> tuple[int]:
    return (triton.cdiv(n, block),)


def main() -> dict:
    seen = {}
    x, y = torch.randn(N), torch.randn(N)
    # This file is the learner's, as the worker sets it up (every kernel below but the library's).
    own_compile.install((__file__,), "cpu")
    started = time.perf_counter()
    triton_frontend.warm()
    seen["warm_seconds"] = time.perf_counter() - started
    check = triton_frontend.compile_error
    started = time.perf_counter()
    seen["add"] = check(add_kernel.fn, (x, y, torch.empty_like(x), N), {"BLOCK_SIZE": 128})
    seen["add_seconds"] = time.perf_counter() - started
    seen["numpy_add"] = check(numpy_add_kernel.fn, (x, y, torch.empty_like(x), N), {"BLOCK_SIZE": 128})
    seen["numpy_when_big"] = [check(numpy_when_big_kernel.fn, (x, y, torch.empty_like(x), N), {"BLOCK_SIZE": b}) for b in (128, 1024)]
    seen["runtime_arange"] = check(runtime_arange_kernel.fn, (x, torch.empty_like(x), N), {})
    seen["not_bound"] = check(add_kernel.fn, (x, y), {"BLOCK_SIZE": 128})
    seen["activations"] = [check(activation_kernel.fn, (x, torch.empty_like(x), N), {"BLOCK_SIZE": 1024, "ACTIVATION": make_activation(n)}) for n in (False, True)]
    seen["library_callee"] = check(calls_library_kernel.fn, (x, torch.empty_like(x), N), {"BLOCK_SIZE": 1024})

    # The cache: one compile per kernel and specialization. A length divisible by 16 is the same
    # specialization to the front end; a length of 1 is a constexpr, so another one.
    compiles = []
    build = triton_frontend._build_ir
    triton_frontend._build_ir = lambda *args: compiles.append(args[0]) or build(*args)
    try:
        started = time.perf_counter()
        again = [check(add_kernel.fn, (x, y, torch.empty_like(x), n), {"BLOCK_SIZE": 128}) for n in (N, N, 1024)]
        seen["cached_seconds"] = time.perf_counter() - started
        seen["cached"] = [again, len(compiles)]
        check(add_kernel.fn, (x, y, torch.empty_like(x), 1), {"BLOCK_SIZE": 128})
        check(add_kernel.fn, (x, y, torch.empty_like(x), N), {"BLOCK_SIZE": 256})
        seen["new_specializations"] = len(compiles)
    finally:
        triton_frontend._build_ir = build

    # The interpreter, then the front end, then the interpreter again: each leaves the language as
    # the other needs it (a launch that calls tl.sum leaves tl.core patched without the fix).
    def interpreter_front_end_interpreter():
        out = torch.empty(1)
        row_sum_kernel[(1,)](x, out, N, BLOCK_SIZE=1024)
        first = out.clone()
        seen["after_the_interpreter"] = [check(row_sum_kernel.fn, (x, out, N), {"BLOCK_SIZE": 2048}), check(add_kernel.fn, (x, y, torch.empty_like(x), N), {"BLOCK_SIZE": 512})]
        row_sum_kernel[(1,)](x, out, N, BLOCK_SIZE=1024)
        seen["row_sum_again"] = bool(torch.equal(first, out))
        seen["interpreting_again"] = [type(tl.sum).__name__, triton.knobs.runtime.interpret]

    _, record = interpreter.run_recorded(interpreter_front_end_interpreter)
    seen["row_sum_recorded"] = {k.name: reason for k, reason in record.compile_errors.items()}

    # What the worker sends the judge about a call.
    def numpy_then_triton():
        out = torch.empty_like(x)
        numpy_add_kernel[_grid(N, 128)](x, y, out, N, BLOCK_SIZE=128)
        add_kernel[_grid(N, 128)](x, y, out, N, BLOCK_SIZE=128)
        return out

    out, record = interpreter.run_recorded(numpy_then_triton)
    seen["right_answer"] = bool(torch.allclose(out, x + y))
    seen["summary"] = LaunchSummary(record).summary(out, __file__, {"x": x, "y": y})
    return seen


if __name__ == "__main__":
    print(json.dumps(main()))
