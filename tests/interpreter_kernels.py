"""Kernels and scenarios for tests/test_interpreter.py, each run in a fresh process under the Triton
interpreter: ``python tests/interpreter_kernels.py SCENARIO`` prints one JSON line of what it saw."""

from __future__ import annotations

import hashlib
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from autograder import interpreter  # noqa: E402

N = 1000  # not a multiple of BLOCK_SIZE: the last program's block runs 24 lanes past the end
BLOCK_SIZE = 128


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def add_off_by_one_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def store_off_by_one_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements)
    tl.store(out_ptr + offsets, x, mask=offsets <= n_elements)


@triton.jit
def shift_right_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out[i] = x[i - 1] with no care for i = 0."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets - 1, mask=mask), mask=mask)


@triton.jit
def masked_far_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Lanes past the end point a million elements further out, and are masked off."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    far = tl.where(mask, offsets, offsets + 1_000_000)
    tl.store(out_ptr + far, tl.load(x_ptr + far, mask=mask, other=0.0) * 2.0, mask=mask)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def broadcast_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Every lane loads x[0]: one load instruction, so one read of that element."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets * 0), mask=offsets < n_elements)


@triton.jit
def load_masked_inclusive(ptr, offsets, n_elements):
    return tl.load(ptr + offsets, mask=offsets <= n_elements)


@triton.jit
def nested_copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, load_masked_inclusive(x_ptr, offsets, n_elements), mask=offsets < n_elements)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_COLS)
    row_mask = rows[:, None] < n_rows
    mask = row_mask & (cols[None, :] < n_cols)
    x = tl.load(in_ptr + rows[:, None] * in_row_stride + cols[None, :], mask=mask, other=-float("inf"))
    # Rows past the end are all -inf: give them a finite value so that nothing divides 0 by 0.
    x = tl.where(row_mask, x, 0.0)
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    result = numerator / tl.sum(numerator, axis=1)[:, None]
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], result, mask=mask)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = k * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        accumulator = tl.dot(a, b, accumulator)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, accumulator.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def descriptor_copy_kernel(in_desc, out_desc, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0) * BLOCK_ROWS
    col = tl.program_id(1) * BLOCK_COLS
    out_desc.store([row, col], in_desc.load([row, col]))


@triton.jit
def atomic_add_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, INCLUSIVE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements)
    if INCLUSIVE:
        tl.atomic_add(out_ptr + offsets, x, mask=offsets <= n_elements)
    else:
        tl.atomic_add(out_ptr + offsets, x, mask=offsets < n_elements)


@triton.jit
def load_at_kernel(x_ptr, out_ptr, OFFSET: tl.constexpr):
    tl.store(out_ptr, tl.load(x_ptr + OFFSET))


@triton.jit
def spread_load_kernel(x_ptr, out_ptr, STRIDE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets * STRIDE))


@triton.jit
def straddle_kernel(x_ptr, out_ptr, BYTE_OFFSET: tl.constexpr):
    """Loads a float that starts inside x and ends past it."""
    bytes_ptr = x_ptr.to(tl.pointer_type(tl.int8)) + BYTE_OFFSET
    tl.store(out_ptr, tl.load(bytes_ptr.to(tl.pointer_type(tl.float32))))


@triton.jit
def atomic_cas_kernel(lock_ptr, OFFSET: tl.constexpr):
    tl.atomic_cas(lock_ptr + OFFSET, 0, 1)


def _grid(n: int) -> tuple[int]:
    return (triton.cdiv(n, BLOCK_SIZE),)


def _inputs(seed: int = 0, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=generator), torch.randn(n, generator=generator)


def _error(launch) -> str:
    """The exception a launch raises, as the learner would see it."""
    try:
        launch()
    except Exception as error:  # noqa: BLE001 (the type is part of what the test checks)
        return f"{type(error).__name__}: {error}"
    return "no error"


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def tail() -> dict:
    """The learner's classic mistake, then an honest launch in the same process."""
    interpreter.install_guard()
    x, y = _inputs()
    out = torch.empty_like(x)
    message = _error(lambda: add_off_by_one_kernel[_grid(N)](x, y, out, N, BLOCK_SIZE=BLOCK_SIZE))
    add_kernel[_grid(N)](x, y, out, N, BLOCK_SIZE=BLOCK_SIZE)
    return {"message": message, "honest_after": torch.equal(out, x + y)}


def out_of_bounds() -> dict:
    interpreter.install_guard()
    x, y = _inputs()
    seen = {}
    # out is the first N elements of a longer buffer, so the element past its end is memory this
    # process owns and can inspect: the refused store must leave it alone.
    buffer = torch.full((N + 8,), -7.0)
    out = buffer[:N]
    seen["store_past_end"] = _error(lambda: store_off_by_one_kernel[_grid(N)](x, out, N, BLOCK_SIZE=BLOCK_SIZE))
    seen["store_left_alone"] = bool((buffer[N:] == -7.0).all()) and torch.equal(out[: N - N % BLOCK_SIZE], x[: N - N % BLOCK_SIZE])
    seen["last_block_not_stored"] = bool((out[N - N % BLOCK_SIZE:] == -7.0).all())
    seen["read_before_start"] = _error(lambda: shift_right_kernel[_grid(N)](x, torch.empty_like(x), N, BLOCK_SIZE=BLOCK_SIZE))
    seen["device_function"] = _error(lambda: nested_copy_kernel[_grid(N)](x, torch.empty_like(x), N, BLOCK_SIZE=BLOCK_SIZE))
    totals = torch.zeros(N)
    seen["atomic_add_past_end"] = _error(lambda: atomic_add_kernel[_grid(N)](x, totals, N, BLOCK_SIZE=BLOCK_SIZE, INCLUSIVE=True))
    lock = torch.zeros(1, dtype=torch.int32)
    seen["atomic_cas_past_end"] = _error(lambda: atomic_cas_kernel[(1,)](lock, OFFSET=1))
    # A descriptor that claims one more row than its tensor has: its own bounds check lets the row through.
    matrix = torch.randn(40, 48)
    wrong = TensorDescriptor(matrix, [41, 48], list(matrix.stride()), [16, 16])
    right_out = TensorDescriptor.from_tensor(torch.empty(41, 48), [16, 16])
    seen["descriptor_past_end"] = _error(lambda: descriptor_copy_kernel[(3, 3)](wrong, right_out, BLOCK_ROWS=16, BLOCK_COLS=16))
    # Lane 0 reads x[0], lane 1 reads 16 KiB further: memory of the longer buffer x is cut from (never
    # another argument), and blamed on x because lane 0 shows where the pointer came from.
    longer = torch.zeros(8 * N)
    seen["spread_past_end"] = _error(lambda: spread_load_kernel[(1,)](longer[:N], torch.empty(2), STRIDE=4096, BLOCK_SIZE=2))
    seen["straddles_end"] = _error(lambda: straddle_kernel[(1,)](x, torch.empty(1), BYTE_OFFSET=4 * N - 2))
    seen["far_outside"] = _error(lambda: load_at_kernel[(1,)](x, torch.empty(1), OFFSET=1 << 30))
    return seen


def _honest_outputs() -> dict:
    x, y = _inputs(1)
    outputs, right = {}, {}
    out = torch.empty_like(x)
    add_kernel[_grid(N)](x, y, out, N, BLOCK_SIZE=BLOCK_SIZE)
    outputs["add"], right["add"] = out, torch.equal(out, x + y)

    out = torch.empty_like(x)
    masked_far_kernel[_grid(N)](x, out, N, BLOCK_SIZE=BLOCK_SIZE)
    outputs["masked_far"], right["masked_far"] = out, torch.equal(out, x * 2)

    rows, cols = 37, 781
    z = torch.randn(rows, cols, generator=torch.Generator().manual_seed(2))
    out = torch.empty_like(z)
    softmax_kernel[(triton.cdiv(rows, 8),)](out, z, z.stride(0), out.stride(0), rows, cols, BLOCK_ROWS=8, BLOCK_COLS=1024)
    outputs["softmax"], right["softmax"] = out, torch.allclose(out, torch.softmax(z, dim=1), atol=1e-6, rtol=1e-5)

    M, K, Nc = 45, 70, 33
    generator = torch.Generator().manual_seed(3)
    a = torch.randn(M, K, generator=generator).to(torch.bfloat16)
    b = torch.randn(K, Nc, generator=generator).to(torch.bfloat16)
    c = torch.empty(M, Nc, dtype=torch.bfloat16)
    matmul_kernel[(triton.cdiv(M, 16), triton.cdiv(Nc, 16))](
        a, b, c, M, Nc, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=32,
    )
    reference = (a.double() @ b.double()).to(torch.bfloat16)
    outputs["matmul_bf16"], right["matmul_bf16"] = c, torch.allclose(c.double(), reference.double(), rtol=2e-2, atol=1e-2)

    matrix = torch.randn(40, 48, generator=torch.Generator().manual_seed(4))
    out = torch.empty_like(matrix)
    descriptor_copy_kernel[(3, 3)](TensorDescriptor.from_tensor(matrix, [16, 16]), TensorDescriptor.from_tensor(out, [16, 16]),
                                   BLOCK_ROWS=16, BLOCK_COLS=16)
    outputs["descriptor_copy"], right["descriptor_copy"] = out, torch.equal(out, matrix)

    totals = torch.zeros(N)
    atomic_add_kernel[_grid(N)](x, totals, N, BLOCK_SIZE=BLOCK_SIZE, INCLUSIVE=False)
    outputs["atomic_add"], right["atomic_add"] = totals, torch.equal(totals, x)
    return {"digests": {k: _digest(v) for k, v in outputs.items()}, "right": right}


def honest_plain() -> dict:
    interpreter.patch_bf16_dot()
    return _honest_outputs()


def honest_guarded() -> dict:
    patched = interpreter.install_guard()
    executor = triton.runtime.interpreter.GridExecutor
    before = (executor.__call__, triton.runtime.interpreter.InterpreterBuilder.create_masked_load)
    again = interpreter.install_guard()
    unchanged = before == (executor.__call__, triton.runtime.interpreter.InterpreterBuilder.create_masked_load)
    interpreter.patch_bf16_dot()
    result, _ = interpreter.run_recorded(_honest_outputs)
    result["installed"] = [patched, again, unchanged]
    return result


def record() -> dict:
    x, y = _inputs(5)
    seen = {}

    def vector_add(x, y):
        # The output is allocated inside the call, as a learner's function does.
        out = torch.empty_like(x)
        add_kernel[_grid(N)](x, y, out, N, BLOCK_SIZE=BLOCK_SIZE)
        return out

    out, launches = interpreter.run_recorded(vector_add, x, y)
    seen["kernels"] = [[k.name, os.path.basename(k.file), k.line] for k in launches.kernels()]
    seen["add_line"] = add_kernel.fn.__code__.co_firstlineno
    seen["written"] = launches.written_by_kernels(out)
    seen["read"] = [launches.read_fraction(x), launches.read_fraction(y), launches.read_fraction(out)]
    seen["inputs_written"] = launches.written_by_kernels(x)

    def overwritten():
        out = torch.empty_like(x)
        copy_kernel[_grid(N)](x, out, N, BLOCK_SIZE=BLOCK_SIZE)
        return out.copy_(x + y)  # the kernel's result replaced by PyTorch's

    out, launches = interpreter.run_recorded(overwritten)
    seen["overwritten"] = launches.written_by_kernels(out)

    def torch_output():
        scratch = torch.empty_like(x)
        copy_kernel[_grid(N)](x, scratch, N, BLOCK_SIZE=BLOCK_SIZE)
        return x + y, scratch  # a kernel ran, but PyTorch made the output

    (out, scratch), launches = interpreter.run_recorded(torch_output)
    seen["torch_output"] = launches.written_by_kernels(out)
    seen["scratch"] = launches.written_by_kernels(scratch)

    def half_written():
        out = torch.zeros_like(x)
        copy_kernel[_grid(N // 2)](x, out, N // 2, BLOCK_SIZE=BLOCK_SIZE)
        return out

    out, launches = interpreter.run_recorded(half_written)
    seen["half_written"] = launches.written_by_kernels(out)
    seen["half_read"] = [launches.read_fraction(x), launches.read_fraction(x[: N // 2]), launches.read_fraction(x[N // 2:])]
    seen["halves_written"] = [launches.written_by_kernels(out[: N // 2]), launches.written_by_kernels(out[N // 2:])]

    def many():
        z = torch.randn(37, 781)
        out = torch.empty_like(z)
        softmax_kernel[(triton.cdiv(37, 8),)](out, z, z.stride(0), out.stride(0), 37, 781, BLOCK_ROWS=8, BLOCK_COLS=1024)
        totals = torch.zeros(N)
        atomic_add_kernel[_grid(N)](x, totals, N, BLOCK_SIZE=BLOCK_SIZE, INCLUSIVE=False)
        return z, out, totals

    (z, out, totals), launches = interpreter.run_recorded(many)
    # Every other column of z, as a strided view: 391 of 781 columns.
    columns = z[:, ::2]
    seen["softmax"] = [launches.written_by_kernels(out), launches.read_fraction(z), launches.read_fraction(columns)]
    seen["atomics"] = [launches.written_by_kernels(totals), launches.read_fraction(totals)]
    seen["kernels_many"] = [k.name for k in launches.kernels()]
    seen["launches_many"] = len(launches.launches)
    seen["not_compiled"] = {k.name: reason for k, reason in launches.compile_errors.items()}

    def loads():
        out = torch.empty_like(x)
        copy_kernel[_grid(N)](x, out, N, BLOCK_SIZE=BLOCK_SIZE)
        copy_kernel[_grid(N // 2)](x, out, N // 2, BLOCK_SIZE=BLOCK_SIZE)  # the first half again
        broadcast_kernel[(1,)](y, out, BLOCK_SIZE, BLOCK_SIZE=BLOCK_SIZE)
        return out

    out, launches = interpreter.run_recorded(loads)
    seen["loads"] = [launches.most_loads(t) for t in (x, x[N // 2:], x[::2], y, y[1:], out)]
    return seen


def _zeroes_between_launches(x, y):
    # x into a zeroed buffer, the buffer zeroed on the host, y into it: four launches.
    acc, out = torch.zeros_like(x), torch.empty_like(x)
    atomic_add_kernel[_grid(N)](x, acc, N, BLOCK_SIZE=BLOCK_SIZE, INCLUSIVE=False)
    copy_kernel[_grid(N)](acc, out, N, BLOCK_SIZE=BLOCK_SIZE)
    acc.zero_()
    atomic_add_kernel[_grid(N)](y, acc, N, BLOCK_SIZE=BLOCK_SIZE, INCLUSIVE=False)
    atomic_add_kernel[_grid(N)](acc, out, N, BLOCK_SIZE=BLOCK_SIZE, INCLUSIVE=False)
    return out


def _host_answer(x, y):
    # NumPy's sum, carried to the output by a kernel.
    answer = torch.from_numpy(x.numpy() + y.numpy())
    out = torch.empty_like(x)
    copy_kernel[_grid(N)](answer, out, N, BLOCK_SIZE=BLOCK_SIZE)
    return out


def replay() -> dict:
    """Each call's launches replayed on other values of x and y: how far the output is from their sum."""
    x, y = _inputs(7)
    # Values whose bytes the host's zeroing leaves as they were: +0.0 (every byte zero), -0.0.
    x[::7], x[3::7] = 0.0, -0.0
    x_new, y_new = _inputs(8)
    seen = {}
    for name, fn in (("zeroes_between_launches", _zeroes_between_launches), ("host_answer", _host_answer)):
        out, record = interpreter.run_recorded(fn, x, y)
        inputs = {"x": x, "y": y}
        for reading in ("changed", "whole"):
            interpreter.run_recorded(record.replay.run, inputs, {"x": x_new, "y": y_new}, reading == "whole", replaying=record.replay)
            seen[f"{name} {reading}"] = {"wrong": int((out - (x_new + y_new)).abs().gt(1e-6).sum()), "tampered": record.replay.tampered,
                                         "inputs_kept": bool(torch.equal(inputs["x"], x))}
    return seen


def setup() -> dict:
    from autograder.setup import setup as notebook_setup

    device = notebook_setup()
    x, y = _inputs()
    message = _error(lambda: add_off_by_one_kernel[_grid(N)](x, y, torch.empty_like(x), N, BLOCK_SIZE=BLOCK_SIZE))
    return {"device": device, "message": message}


if __name__ == "__main__":
    scenario = {"tail": tail, "out_of_bounds": out_of_bounds, "honest_plain": honest_plain, "honest_guarded": honest_guarded,
                "record": record, "replay": replay, "setup": setup}[sys.argv[1]]
    print(json.dumps(scenario()))
