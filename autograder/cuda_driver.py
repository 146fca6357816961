"""The few CUDA driver calls the judge and the worker need beyond torch: allocations of their own (so
that sharing one with another process shares nothing else), IPC handles, and the stream memory
operations that let one process order its GPU work after another's.

Every call goes through the primary context torch made current; errors raise CudaError.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import torch

_c = ctypes
CU_STREAM_WAIT_VALUE_GEQ = 0x0
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1
IPC_HANDLE_BYTES = 64


class CudaError(RuntimeError):
    pass


class _IpcHandle(ctypes.Structure):
    # Unsigned bytes, not c_char: a c_char array field reads back cut at its first zero byte.
    _fields_ = [("reserved", ctypes.c_ubyte * IPC_HANDLE_BYTES)]

    def hex(self) -> str:
        return bytes(self.reserved).hex()

    @classmethod
    def from_hex(cls, text: str) -> _IpcHandle:
        data = bytes.fromhex(text)
        if len(data) != IPC_HANDLE_BYTES:
            raise CudaError("an IPC handle has 64 bytes")
        handle = cls()
        ctypes.memmove(handle.reserved, data, IPC_HANDLE_BYTES)
        return handle


_lib = None


def _driver():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        signatures = {
            "cuMemAlloc_v2": [_c.POINTER(_c.c_uint64), _c.c_size_t],
            "cuMemFree_v2": [_c.c_uint64],
            "cuMemGetAddressRange_v2": [_c.POINTER(_c.c_uint64), _c.POINTER(_c.c_size_t), _c.c_uint64],
            "cuIpcGetMemHandle": [_c.POINTER(_IpcHandle), _c.c_uint64],
            "cuPointerGetAttribute": [_c.c_void_p, _c.c_int, _c.c_uint64],
            "cuIpcOpenMemHandle_v2": [_c.POINTER(_c.c_uint64), _IpcHandle, _c.c_uint],
            "cuIpcCloseMemHandle": [_c.c_uint64],
            "cuStreamWaitValue32_v2": [_c.c_void_p, _c.c_uint64, _c.c_uint32, _c.c_uint],
            "cuStreamWriteValue32_v2": [_c.c_void_p, _c.c_uint64, _c.c_uint32, _c.c_uint],
        }
        for name, argtypes in signatures.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        _lib = lib
    return _lib


def _check(code: int, what: str) -> None:
    if code != 0:
        raise CudaError(f"{what} failed with CUDA driver error {code}")


def _ready() -> None:
    # The driver calls use the current context: torch's primary context, made current by its init.
    torch.cuda.init()
    torch.cuda.current_stream()


def alloc(nbytes: int) -> int:
    _ready()
    ptr = ctypes.c_uint64()
    _check(_driver().cuMemAlloc_v2(ctypes.byref(ptr), max(nbytes, 1)), "cuMemAlloc")
    return ptr.value


def free(ptr: int) -> None:
    _driver().cuMemFree_v2(ptr)


def allocation_of(ptr: int) -> tuple[int, int]:
    """(base, size) of the cudaMalloc allocation that holds ``ptr``."""
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(_driver().cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ptr), "cuMemGetAddressRange")
    return base.value, size.value


# cuda.h's value (15 is IS_GPU_DIRECT_RDMA_CAPABLE, 1 for every allocation: with it every allocation
# at an address shared one cached handle, and a new one made where an old one was freed was described
# by the freed one's handle, which the judge could not open or read stale memory through).
CU_POINTER_ATTRIBUTE_BUFFER_ID = 7
# Allocation (base, buffer id) -> its IPC handle. Getting a handle is a call into the kernel driver
# that took about a millisecond in a grading worker on an H100, once per output of every timed
# call; the caching allocator hands the same allocations out again and again. The buffer id is
# unique to an allocation for the process's life, so a block freed and allocated again at the same
# address gets a handle of its own.
_HANDLES: dict[tuple[int, int], str] = {}


def buffer_id(ptr: int) -> int:
    value = ctypes.c_uint64()
    _check(_driver().cuPointerGetAttribute(ctypes.byref(value), CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr), "cuPointerGetAttribute")
    return value.value


def ipc_handle(base: int) -> str:
    key = (base, buffer_id(base))
    if key not in _HANDLES:
        handle = _IpcHandle()
        _check(_driver().cuIpcGetMemHandle(ctypes.byref(handle), base), "cuIpcGetMemHandle")
        _HANDLES[key] = handle.hex()
    return _HANDLES[key]


def ipc_open(handle_hex: str) -> int:
    _ready()
    handle = _IpcHandle.from_hex(handle_hex)
    ptr = ctypes.c_uint64()
    _check(_driver().cuIpcOpenMemHandle_v2(ctypes.byref(ptr), handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
    return ptr.value


def ipc_close(ptr: int) -> None:
    _driver().cuIpcCloseMemHandle(ptr)


def wait_value(stream: torch.cuda.Stream, address: int, value: int) -> None:
    """Work queued on ``stream`` after this waits until the 32-bit word at ``address`` reaches
    ``value`` (cyclic >=), whichever process writes it."""
    _check(_driver().cuStreamWaitValue32_v2(stream.cuda_stream, address, value & 0xFFFFFFFF, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32")


def write_value(stream: torch.cuda.Stream, address: int, value: int) -> None:
    """Write ``value`` to the 32-bit word at ``address`` once the work queued before it on ``stream`` is done."""
    _check(_driver().cuStreamWriteValue32_v2(stream.cuda_stream, address, value & 0xFFFFFFFF, 0), "cuStreamWriteValue32")


@dataclass
class _Memory:
    """Device memory seen through the CUDA array interface, so torch wraps it without a copy; the
    tensor keeps this object (and so the memory) alive."""

    ptr: int
    nbytes: int
    owner: object = None

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3, "strides": None}


def as_tensor(ptr: int, nbytes: int, dtype: torch.dtype, shape: tuple, strides: tuple, owner: object = None) -> torch.Tensor:
    """A torch tensor over ``nbytes`` of device memory at ``ptr`` (strides in elements)."""
    raw = torch.as_tensor(_Memory(ptr, nbytes, owner), device="cuda")
    itemsize = torch.empty((), dtype=dtype).element_size()
    flat = raw[: (nbytes // itemsize) * itemsize].view(dtype)
    return flat.as_strided(shape, strides) if shape else flat[:1].reshape(())


PAGE_BYTES = 2 << 20


def whole_pages(nbytes: int) -> int:
    return -(-max(nbytes, 1) // PAGE_BYTES) * PAGE_BYTES


class Block:
    """An allocation of the judge's own, for sharing with one worker: its IPC handle exposes this
    memory and nothing else the judge holds."""

    def __init__(self, nbytes: int) -> None:
        # Whole 2 MiB pages: a block of any other size, opened in a worker through IPC, was read
        # 1.66x slower there than in its owner (Act 6's paged attention over 13 input sets in one
        # 7 GB block on an H100: 0.346 against 0.209 ms a call, the same block rounded up 0.209 ms;
        # results/runs/2026-11-25-2xh100-test-gpu/README.md).
        self.nbytes = whole_pages(nbytes)
        self.ptr = alloc(self.nbytes)
        # cuMemAlloc does not clear memory the judge's process freed before: zeroed before the
        # handle exists, the worker can read nothing the judge held there (a reference, an
        # expected output), in its inputs' padding or past the last one.
        as_tensor(self.ptr, self.nbytes, torch.uint8, (self.nbytes,), (1,)).zero_()
        torch.cuda.current_stream().synchronize()
        self.handle = ipc_handle(self.ptr)

    def tensor(self, dtype: torch.dtype, shape: tuple, strides: tuple | None = None) -> torch.Tensor:
        strides = strides if strides is not None else _contiguous(shape)
        return as_tensor(self.ptr, self.nbytes, dtype, tuple(shape), tuple(strides), owner=self)

    def __del__(self) -> None:
        if getattr(self, "ptr", 0):
            free(self.ptr)
            self.ptr = 0


def _contiguous(shape: tuple) -> tuple:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))
