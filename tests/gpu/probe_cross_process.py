"""Probe for the grader's process model: how should one process time GPU work that another runs?

Two ways of bracketing a worker's call with the judge's own events, compared in one run:
  device wait:  judge [spin][T0][write go][wait done][T1]; worker [wait go][work][write done]
  host poll:    judge [spin][T0][write go] ... polls a host word ... [T1]; worker [wait go][work]
                [write done to host memory]
for no work, a vector add of 2^25 and of 2^27 floats, with and without the torch profiler in the
worker, beside the same add timed in one process. Printed: median [p10, p90] of T1 - T0 in us.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
from multiprocessing import shared_memory

import torch
import torch.multiprocessing as mp

CALLS = 40
SIZES = (0, 1 << 25, 1 << 27)


def _lib():
    lib = ctypes.CDLL("libcuda.so.1")
    for name in ("cuStreamWaitValue32_v2", "cuStreamWriteValue32_v2"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
    lib.cuMemHostRegister_v2.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    lib.cuMemHostGetDevicePointer_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_uint]
    return lib


def worker(conn, flags, x, y, out, profile: bool, shm_name: str) -> None:
    lib = _lib()
    stream = torch.cuda.current_stream().cuda_stream
    page = shared_memory.SharedMemory(name=shm_name)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page.buf))
    assert lib.cuMemHostRegister_v2(address, 4096, 0x01 | 0x02) == 0
    device_ptr = ctypes.c_uint64()
    assert lib.cuMemHostGetDevicePointer_v2(ctypes.byref(device_ptr), address, 0) == 0
    prof = None
    if profile:
        from torch.profiler import ProfilerActivity

        prof = torch.profiler.profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
    tiny = torch.zeros(1, device="cuda")
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            break
        i, size, mode = msg
        assert lib.cuStreamWaitValue32_v2(stream, flags.data_ptr(), i, 0) == 0
        if size:
            torch.add(x[:size], y[:size], out=out[:size])
        else:
            tiny.zero_()
        target = flags.data_ptr() + 4 if mode == "device wait" else device_ptr.value
        assert lib.cuStreamWriteValue32_v2(stream, target, i, 0) == 0
        conn.send("queued")
        torch.cuda.synchronize()
    if prof is not None:
        prof.__exit__(None, None, None)
    conn.send("bye")


def med(v) -> str:
    v = sorted(v)
    return f"{statistics.median(v):8.1f} [{v[len(v) // 10]:7.1f}, {v[(9 * len(v)) // 10]:7.1f}]"


def main() -> int:
    torch.cuda.init()
    print(torch.cuda.get_device_name(0), torch.__version__)
    lib = _lib()
    n = max(SIZES)
    x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    flags = torch.zeros(2, dtype=torch.int32, device="cuda")
    flush = torch.empty(2 * 60 * 2**20 // 4, device="cuda")
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.Stream()
    page = shared_memory.SharedMemory(create=True, size=4096)
    done_word = memoryview(page.buf).cast("I")
    for size in SIZES[1:]:
        samples = []
        for _ in range(CALLS):
            flush.zero_()
            torch.cuda._sleep(300_000)
            t0.record()
            torch.add(x[:size], y[:size], out=out[:size])
            t1.record()
            t1.synchronize()
            samples.append(t0.elapsed_time(t1) * 1e3)
        print(f"{'one process':<30} add 2^{size.bit_length() - 1}: {med(samples)}")
    ctx = mp.get_context("spawn")
    call = 0
    for profile in (False, True):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker, args=(child, flags, x, y, out, profile, page.name))
        proc.start()
        assert parent.recv() == "ready"
        for mode in ("device wait", "host poll"):
            for size in SIZES:
                samples = []
                for _ in range(CALLS + 3):
                    call += 1
                    with torch.cuda.stream(stream):
                        flush.zero_()
                        torch.cuda._sleep(600_000)
                        t0.record()
                        assert lib.cuStreamWriteValue32_v2(stream.cuda_stream, flags.data_ptr(), call, 0) == 0
                        if mode == "device wait":
                            assert lib.cuStreamWaitValue32_v2(stream.cuda_stream, flags.data_ptr() + 4, call, 0) == 0
                            t1.record()
                    parent.send((call, size, mode))
                    assert parent.recv() == "queued"
                    if mode == "host poll":
                        while done_word[0] != call:
                            pass
                        with torch.cuda.stream(stream):
                            t1.record()
                    t1.synchronize()
                    samples.append(t0.elapsed_time(t1) * 1e3)
                label = f"add 2^{size.bit_length() - 1}" if size else "tiny kernel"
                print(f"{mode + (', profiler' if profile else ''):<30} {label}: {med(samples[3:])}")
        parent.send(None)
        parent.recv()
        proc.join()
    done_word.release()
    page.close()
    page.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
