"""How arrays cross between the judge and the worker without passing through either's Python objects.

On a GPU every input lives in an allocation of its own (autograder.cuda_driver.Block) whose IPC
handle the worker opens, and the worker's output is read by the judge through the IPC handle of the
allocation that holds it: large outputs never leave the device. On a CPU, inputs are files in a
private shared-memory folder mapped by both processes, and outputs come back as raw bytes.
"""

from __future__ import annotations

import itertools
import mmap
import os

import torch

_NAMES = itertools.count()

DTYPES = {str(d).removeprefix("torch."): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)}
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def span_bytes(shape, strides, itemsize: int) -> int:
    """Bytes from the first element to one past the last, for non-negative strides."""
    if any(s == 0 for s in shape):
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))) * itemsize


ALIGN = 512


class Arena:
    """One allocation of the judge's that holds the shared inputs of one call after another: the
    worker maps it once (mapping device memory between processes costs milliseconds), and it
    grows, under a new handle, when a case needs more.

    A block it outgrows stays allocated as long as the arena: the worker still has it mapped, and
    memory freed under another process's mapping is undefined behaviour in CUDA's IPC (the driver
    refuses to map the next block placed over it, CUDA_ERROR_ALREADY_MAPPED). Sizes grow from test
    sizes to benchmark sizes a few times per grading, and the timed windows plan their calls from the
    memory left free, so what the outgrown blocks hold is paid in fewer calls per window, never in
    an allocation that fails."""

    def __init__(self) -> None:
        self.block = None
        self._outgrown: list = []

    def reserve(self, nbytes: int):
        if self.block is None or self.block.nbytes < nbytes:
            from . import cuda_driver

            if self.block is not None:
                self._outgrown.append(self.block)
            self.block = cuda_driver.Block(max(nbytes, 1 << 20))
        return self.block


class Inputs:
    """The judge's shared copies of one call's tensors: ``tensors`` for the judge to refill and read,
    ``describe()`` for the worker to open. Scalars travel by value. On a GPU they lie in ``arena``
    (earlier inputs placed there are overwritten); on a CPU, in files of ``folder``."""

    def __init__(self, values: dict, device: str, folder: str | None = None, arena: Arena | None = None) -> None:
        self.device, self.tensors, self._descriptors, self._paths = device, {}, [], []
        tensors = {k: v for k, v in values.items() if isinstance(v, torch.Tensor)}
        offsets, total = {}, 0
        for name, value in tensors.items():
            offsets[name] = total
            total += -(-span_bytes(value.shape, value.stride(), value.element_size()) // ALIGN) * ALIGN
        block = (arena or Arena()).reserve(total) if device == "cuda" and tensors else None
        self._block, self._offsets, self._total = block, offsets, total
        for name, value in values.items():
            if name not in tensors:
                self._descriptors.append({"name": name, "kind": "scalar", "value": value})
                continue
            nbytes = span_bytes(value.shape, value.stride(), value.element_size())
            meta = {"name": name, "kind": "tensor", "dtype": dtype_name(value.dtype), "shape": list(value.shape), "strides": list(value.stride()), "nbytes": nbytes}
            if device == "cuda":
                from . import cuda_driver

                shared = cuda_driver.as_tensor(block.ptr + offsets[name], max(nbytes, 1), value.dtype, tuple(value.shape), tuple(value.stride()), owner=block)
                meta.update(handle=block.handle, offset=offsets[name])
            else:
                path = os.path.join(folder, f"input-{next(_NAMES)}")
                self._paths.append(path)
                shared = _map_file(path, nbytes, value.dtype, tuple(value.shape), tuple(value.stride()), create=True)
                meta["path"] = path
            shared.copy_(value)
            self.tensors[name] = shared
            self._descriptors.append(meta)

    def describe(self) -> list[dict]:
        return self._descriptors

    def staging(self) -> tuple[torch.Tensor | None, dict[str, torch.Tensor]]:
        """A private copy of the shared block (on a GPU) and each tensor's place in it: inputs written
        there reach the shared tensors in one copy (``refill_from``), however many they are."""
        whole = self._whole()
        if whole is None:
            return None, {}
        stage = whole.clone()
        return stage, {name: place(stage, self._offsets[name], shared) for name, shared in self.tensors.items()}

    def refill_from(self, stage: torch.Tensor | None) -> None:
        """Every shared tensor from ``stage`` (made by ``staging``), in one copy on the current stream."""
        whole = self._whole()
        if whole is not None:
            whole.copy_(stage)

    def _whole(self) -> torch.Tensor | None:
        """The shared block as bytes; None without tensors to share (scalars only)."""
        from . import cuda_driver

        if self._block is None:
            return None
        return cuda_driver.as_tensor(self._block.ptr, max(self._total, 1), torch.uint8, (max(self._total, 1),), (1,), owner=self._block)

    def release(self) -> None:
        """Remove the files of CPU inputs (the judge's mapping stays valid until it is dropped)."""
        for path in self._paths:
            try:
                os.unlink(path)
            except OSError:
                pass


def shared_sets_of(private: dict, count: int, device: str, folder: str | None = None, arena=None) -> tuple[list[dict], list[list[dict]], Inputs]:
    """``count`` shared copies of one call's inputs (on a GPU, in one allocation): the tensors of
    each for the judge to refill, the descriptors of each for the worker to open, and the block
    that holds them all."""
    combined = {f"{index}/{name}": value for index in range(count) for name, value in private.items()}
    inputs = Inputs(combined, device, folder, arena)
    tensors: list[dict] = [{} for _ in range(count)]
    descriptors: list[list[dict]] = [[] for _ in range(count)]
    for described in inputs.describe():
        index, name = described["name"].split("/", 1)
        descriptors[int(index)].append({**described, "name": name})
        if described["name"] in inputs.tensors:
            tensors[int(index)][name] = inputs.tensors[described["name"]]
    return tensors, descriptors, inputs


def place(buffer: torch.Tensor, offset: int, like: torch.Tensor) -> torch.Tensor:
    """A tensor of ``like``'s type, shape and strides lying in the bytes ``buffer[offset:]``."""
    nbytes = span_bytes(like.shape, like.stride(), like.element_size())
    whole = (nbytes // like.element_size()) * like.element_size()
    flat = buffer[offset : offset + whole].view(like.dtype)
    return flat.as_strided(tuple(like.shape), tuple(like.stride())) if like.dim() else buffer[offset : offset + like.element_size()].view(like.dtype).reshape(())


def _map_file(path: str, nbytes: int, dtype, shape, strides, create: bool) -> torch.Tensor:
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if create:
            os.ftruncate(fd, max(nbytes, 1))
        mapped = mmap.mmap(fd, max(nbytes, 1))
    finally:
        os.close(fd)
    flat = torch.frombuffer(mapped, dtype=torch.uint8)
    itemsize = torch.empty((), dtype=dtype).element_size()
    typed = flat[: (nbytes // itemsize) * itemsize].view(dtype) if nbytes else torch.empty(0, dtype=dtype)
    return typed.as_strided(shape, strides) if shape else typed[:1].reshape(())


def open_inputs(descriptors: list[dict], device: str) -> dict:
    """Worker side: the judge's inputs as tensors over the shared memory (no copies)."""
    opened = {}
    for d in descriptors:
        if d["kind"] == "scalar":
            opened[d["name"]] = d["value"]
            continue
        dtype, shape, strides = DTYPES[d["dtype"]], tuple(d["shape"]), tuple(d["strides"])
        if device == "cuda":
            from . import cuda_driver

            if d["handle"] not in _OPENED:
                _OPENED[d["handle"]] = cuda_driver.ipc_open(d["handle"])
            ptr = _OPENED[d["handle"]] + int(d["offset"])
            opened[d["name"]] = cuda_driver.as_tensor(ptr, max(d["nbytes"], 1), dtype, shape, strides)
        else:
            opened[d["name"]] = _map_file(d["path"], d["nbytes"], dtype, shape, strides, create=False)
    return opened


# Worker side: the judge's allocations mapped so far (kept until the worker ends).
_OPENED: dict[str, int] = {}


def describe_output(out: torch.Tensor) -> tuple[dict, bytes]:
    """Worker side: where the judge finds the output. A GPU output by the IPC handle of the
    allocation that holds it; a CPU output as its bytes (it must be contiguous to be judged)."""
    meta = {"dtype": dtype_name(out.dtype), "shape": list(out.shape), "strides": list(out.stride()), "contiguous": out.is_contiguous()}
    if out.is_cuda:
        from . import cuda_driver

        base, _ = cuda_driver.allocation_of(out.data_ptr())
        meta.update(device="cuda", handle=cuda_driver.ipc_handle(base), offset=out.data_ptr() - base)
        return meta, b""
    meta["device"] = "cpu"
    data = out.contiguous().view(torch.uint8).reshape(-1).numpy().tobytes() if out.numel() else b""
    return meta, data


class OutputReader:
    """Judge side: opens the worker's allocations (once each) and copies outputs into the judge's
    own memory on the judge's stream."""

    def __init__(self) -> None:
        self._opened: dict[str, tuple[int, int]] = {}

    def view(self, meta: dict) -> torch.Tensor:
        """The worker's output, read in place (valid until the next call or ``close``)."""
        from . import cuda_driver

        handle = str(meta["handle"])
        if len(handle) != 2 * cuda_driver.IPC_HANDLE_BYTES:
            raise _misdescribed("its memory handle is malformed")
        if handle not in self._opened:
            try:
                ptr = cuda_driver.ipc_open(handle)
            except cuda_driver.CudaError as exc:
                from .wire import WorkerGone

                # The worker keeps every output it describes until the judge has read it, so only
                # the learner's code can have given this memory back (or named memory not its own).
                raise WorkerGone("ERROR", f"the grader could not read your output: its memory was freed (or was never your function's) before it was read ({exc})") from None
            # The size of what was mapped, as the driver sees it: never the worker's word for it.
            self._opened[handle] = (ptr, cuda_driver.allocation_of(ptr)[1])
        base, size = self._opened[handle]
        dtype = DTYPES[meta["dtype"]]
        shape, strides = tuple(meta["shape"]), tuple(meta["strides"])
        offset = int(meta["offset"])
        needed = span_bytes(shape, strides, torch.empty((), dtype=dtype).element_size())
        if offset < 0 or any(s < 0 for s in strides) or offset + needed > size:
            raise _misdescribed("its shape, strides and offset do not fit the memory it names")
        return cuda_driver.as_tensor(base + offset, size - offset, dtype, shape, strides)

    def close(self) -> None:
        from . import cuda_driver

        for ptr, _ in self._opened.values():
            cuda_driver.ipc_close(ptr)
        self._opened.clear()


def _misdescribed(why: str) -> Exception:
    """The worker computes an output's description from the tensor your function returned; one that
    does not hold was changed by code in its process, the learner's (not a failure of the grader)."""
    from .wire import WorkerGone

    return WorkerGone("ERROR", f"the grader could not read your output: {why} (code in your function's process changed what the worker reports about it)")


def output_from_bytes(meta: dict, data: bytes) -> torch.Tensor:
    """Judge side, CPU: the worker's output bytes as a tensor of the judge's own."""
    dtype = DTYPES[meta["dtype"]]
    shape = tuple(int(n) for n in meta["shape"])
    itemsize = torch.empty((), dtype=dtype).element_size()
    count = 1
    for n in shape:
        count *= n
    if len(data) != count * itemsize:
        raise _misdescribed("its bytes do not match its shape and dtype")
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(shape) if count else torch.empty(shape, dtype=dtype)
