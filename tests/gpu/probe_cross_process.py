"""Probe for the grader's process model: can one process time GPU work that another process runs?

The judge (this process) and a worker (a spawned process) share 32-bit flags in device memory
(CUDA IPC). The worker queues its work behind a wait on the "go" flag and writes the "done" flag
after it; the judge queues [L2 flush][spin][T0][write go][wait done][T1]. Only the judge's events
are read. Both sides also write %globaltimer stamps (judge before go and after done, worker after
its wait and after its work), which show where the time between T0 and T1 goes. Variants: the
judge's wait queued before or after the worker has queued its work, short and long spins, and the
torch profiler running in the worker.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

import cupy
import torch
import torch.multiprocessing as mp

CALLS = 30
STAMP = r"""
extern "C" __global__ void stamp(unsigned long long* out, int slot) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    out[slot] = t;
}
"""


def _memops():
    lib = ctypes.CDLL("libcuda.so.1")
    wait, write = lib.cuStreamWaitValue32_v2, lib.cuStreamWriteValue32_v2
    for fn in (wait, write):
        fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        fn.restype = ctypes.c_int
    return wait, write


def _stamp_fn():
    kernel = cupy.RawKernel(STAMP, "stamp")

    def stamp(buffer: torch.Tensor, slot: int) -> None:
        kernel((1,), (1,), (cupy.uint64(buffer.data_ptr()), cupy.int32(slot)))

    return stamp


def worker(conn, flags, stamps, x, y, out, profile: bool) -> None:
    wait, write = _memops()
    stamp = _stamp_fn()
    stream = torch.cuda.current_stream().cuda_stream
    go, done = flags.data_ptr(), flags.data_ptr() + 4
    prof = None
    if profile:
        from torch.profiler import ProfilerActivity

        prof = torch.profiler.profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            break
        i, size, slot = msg
        assert wait(stream, go, i, 0) == 0
        stamp(stamps, slot + 1)
        if size:
            torch.add(x[:size], y[:size], out=out[:size])
        stamp(stamps, slot + 2)
        assert write(stream, done, i, 0) == 0
        conn.send("queued")
    if prof is not None:
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
    conn.send("bye")


def med(values) -> str:
    v = sorted(values)
    return f"{statistics.median(v):7.1f} [{v[len(v) // 10]:6.1f}, {v[(9 * len(v)) // 10]:6.1f}]"


def main() -> int:
    torch.cuda.init()
    print(torch.cuda.get_device_name(0), torch.__version__)
    wait, write = _memops()
    stamp = _stamp_fn()
    n = 1 << 25
    x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    flags = torch.zeros(2, dtype=torch.int32, device="cuda")
    stamps = torch.zeros(4 * 64, dtype=torch.int64, device="cuda")
    flush = torch.empty(2 * 60 * 2**20 // 4, device="cuda")
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.current_stream().cuda_stream
    go, done = flags.data_ptr(), flags.data_ptr() + 4

    samples = []
    for _ in range(CALLS):
        flush.zero_()
        torch.cuda._sleep(300_000)
        t0.record()
        torch.add(x, y, out=out)
        t1.record()
        t1.synchronize()
        samples.append(t0.elapsed_time(t1) * 1e3)
    print(f"one process add 2^25: {med(samples)} us")

    ctx = mp.get_context("spawn")
    call = 0
    variants = [
        ("wait queued first, spin 300k", False, 300_000, True),
        ("wait queued first, spin 2M  ", False, 2_000_000, True),
        ("wait after worker, spin 2M  ", False, 2_000_000, False),
        ("wait queued first, profiler ", True, 2_000_000, True),
    ]
    for label, profile, spin, wait_first in variants:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker, args=(child, flags, stamps, x, y, out, profile))
        proc.start()
        assert parent.recv() == "ready"
        for size in (0, n):
            rows = []
            for k in range(CALLS + 3):
                call += 1
                slot = 4 * (k % 64 // 4)
                flush.zero_()
                torch.cuda._sleep(spin)
                t0.record()
                stamp(stamps, slot)
                assert write(stream, go, call, 0) == 0
                if wait_first:
                    assert wait(stream, done, call, 0) == 0
                    t1.record()
                    stamp(stamps, slot + 3)
                parent.send((call, size, slot))
                assert parent.recv() == "queued"
                if not wait_first:
                    assert wait(stream, done, call, 0) == 0
                    t1.record()
                    stamp(stamps, slot + 3)
                t1.synchronize()
                s = stamps[slot : slot + 4].tolist()
                rows.append((t0.elapsed_time(t1) * 1e3, (s[1] - s[0]) / 1e3, (s[2] - s[1]) / 1e3, (s[3] - s[2]) / 1e3))
            rows = rows[3:]
            what = "add 2^25" if size else "no work "
            cols = list(zip(*rows, strict=True))
            print(f"{label} {what}: T1-T0 {med(cols[0])} | go->worker {med(cols[1])} | worker {med(cols[2])} | worker->judge {med(cols[3])} us")
        parent.send(None)
        parent.recv()
        proc.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
