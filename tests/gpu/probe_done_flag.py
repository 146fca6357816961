"""Probe: what a worker's "done" signal adds to a cross-process timing window, and what it depends on.

The judge's stream does [spin][flush L2][T0][write go][wait stream-done][T1a][wait all-done][T1b].
The worker queues [wait go][torch.add of N floats][write stream-done] on its current stream, replies,
then synchronises its whole context from the host and writes all-done (what makes work on any of
its streams count). Each configuration is one worker process: how its context waits for the GPU
(the driver's default, spin, blocking sync) and whether the torch profiler records its calls.
Printed per size: median T1a - T0 and T1b - T0 in us, beside the same add timed in one process;
then the default configuration again beside other GPU contexts, and beside processes spinning on
every core of the host (the question for the int4 GEMV's windows: does the host's wake-up, which
the all-done word waits for, stretch when the host is busy?).

    python tests/gpu/probe_done_flag.py [--json PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys

import torch

SIZES = (0, 1 << 25, 1 << 27)
WARMUP, CALLS = 5, 30
SCHED = {"default": None, "spin": 0x1, "blocking": 0x4}
CONFIGS = [(s, p) for s in ("default", "spin", "blocking") for p in (False, True)]
# Other processes on the GPU while the default configuration is timed again: idle ones holding a
# context and 2 GiB each, idle ones with the profiler running, and one that frees 16 GiB and exits
# just before the calls (its context is torn down while they run).
BYSTANDER = """
import sys, time, torch
x = torch.empty(int(sys.argv[1]) << 28, device="cuda")
if sys.argv[2] == "1":
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]); prof.__enter__()
torch.cuda.synchronize(); print("up", flush=True)
time.sleep(float(sys.argv[3]))
"""
SCENES = {
    "alone": [],
    "4 idle contexts": [(2, 0, 600)] * 4,
    "4 idle, profiling": [(2, 1, 600)] * 4,
    "a 16 GiB context exiting": [(16, 0, 7)],
}
# The host loaded instead of the GPU: processes that only spin on a core, as many as the host has
# cores and then twice that. The worker's all-done word waits for its host thread to wake from
# torch.cuda.synchronize(); on four H100s whose host ran other gradings, an int4 GEMV's windows of
# 32 calls were charged about 80 us more than the calls' GPU time (eleventh session's README).
SPINNER = "import time\nwhile True:\n    time.perf_counter()\n"
LOADS = {"every core spinning": 1, "twice the cores spinning": 2}


def child(sched: str, profile: bool) -> None:
    flag = SCHED[sched]
    if flag is not None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuInit(0)
        assert lib.cuDevicePrimaryCtxSetFlags_v2(0, flag) == 0
    from autograder import cuda_driver

    torch.cuda.init()
    stream = torch.cuda.current_stream()
    handle = sys.stdin.readline().strip()
    flags = cuda_driver.ipc_open(handle)
    x, y, out = (torch.randn(max(SIZES), device="cuda") for _ in range(3))
    tiny = torch.zeros(1, device="cuda")
    prof = None
    if profile:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    print("ready", flush=True)
    for line in sys.stdin:
        gate, size = json.loads(line)
        if gate < 0:
            break
        cuda_driver.wait_value(stream, flags, gate)
        if size:
            torch.add(x[:size], y[:size], out=out[:size])
        else:
            tiny.zero_()
        cuda_driver.write_value(stream, flags + 4, gate)
        print("answer", flush=True)
        torch.cuda.synchronize()
        cuda_driver.write_value(stream, flags + 8, gate)
    if prof is not None:
        prof.__exit__(None, None, None)


def in_process(timer, size: int) -> float:
    x, y, out = (torch.randn(size, device="cuda") for _ in range(3))
    for _ in range(WARMUP):
        timer.time_call(lambda: torch.add(x, y, out=out))
    return statistics.median(timer.time_call(lambda: torch.add(x, y, out=out))[0] * 1e3 for _ in range(CALLS))


def judge_config(sched: str, profile: bool, flags, handle: str, gate: list[int]) -> dict:
    from autograder import cuda_driver, timing

    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", sched, str(int(profile))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    proc.stdin.write(handle + "\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "ready"
    stream = torch.cuda.Stream()
    flush = torch.empty(128 << 20 >> 2, device="cuda")
    cycles = timing.Timer._calibrate_head_start()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    rows = {}
    for size in SIZES:
        a, b = [], []
        for call in range(WARMUP + CALLS):
            gate[0] += 1
            g = gate[0]
            with torch.cuda.stream(stream):
                torch.cuda._sleep(int(cycles * 1.5))
                flush.zero_()
                events[0].record()
                cuda_driver.write_value(stream, flags, g)
                cuda_driver.wait_value(stream, flags + 4, g)
                events[1].record()
                cuda_driver.wait_value(stream, flags + 8, g)
                events[2].record()
            proc.stdin.write(json.dumps([g, size]) + "\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "answer"
            events[2].synchronize()
            if call >= WARMUP:
                a.append(events[0].elapsed_time(events[1]) * 1e3)
                b.append(events[0].elapsed_time(events[2]) * 1e3)
        rows[size] = {
            "stream_done_us": statistics.median(a),
            "all_done_us": statistics.median(b),
            "all_done_p90_us": sorted(b)[int(0.9 * len(b))],
        }
    proc.stdin.write(json.dumps([-1, 0]) + "\n")
    proc.stdin.close()
    proc.wait(60)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.child:
        child(args.child[0], bool(int(args.child[1])))
        return
    from autograder import cuda_driver, timing

    block = cuda_driver.Block(16)
    block.tensor(torch.int32, (4,)).zero_()
    torch.cuda.synchronize()
    timer = timing.Timer()
    result = {"device": torch.cuda.get_device_name(0), "in_process_us": {s: in_process(timer, s) for s in SIZES if s}, "configs": []}
    gate = [0]
    print(
        f"{result['device']}; in one process: "
        + ", ".join(f"2^{s.bit_length() - 1}: {t:.1f} us" for s, t in result["in_process_us"].items())
    )
    print(f"{'sched':9} {'profiler':8} " + " ".join(f"{'size ' + str(s):>26}" for s in SIZES))
    for sched, profile in CONFIGS:
        rows = judge_config(sched, profile, block.ptr, block.handle, gate)
        result["configs"].append({"sched": sched, "profiler": profile, "rows": rows})
        cells = " ".join(f"{r['stream_done_us']:8.1f} {r['all_done_us']:8.1f} {r['all_done_p90_us']:8.1f}" for r in rows.values())
        print(f"{sched:9} {str(profile):8} {cells}", flush=True)
    print("per size: stream-done, all-done median, all-done p90 (us)")
    result["scenes"] = {}

    def beside(scene: str, procs: list) -> None:
        """The default configuration timed while ``procs`` run, which are then ended."""
        rows = judge_config("default", False, block.ptr, block.handle, gate)
        for proc in procs:
            proc.kill()
            proc.wait()
        result["scenes"][scene] = rows
        cells = " ".join(f"{r['stream_done_us']:8.1f} {r['all_done_us']:8.1f} {r['all_done_p90_us']:8.1f}" for r in rows.values())
        print(f"{scene:26} {cells}", flush=True)

    for scene, bystanders in SCENES.items():
        procs = [subprocess.Popen([sys.executable, "-c", BYSTANDER, *map(str, b)], stdout=subprocess.PIPE, text=True) for b in bystanders]
        for proc in procs:
            proc.stdout.readline()
        beside(scene, procs)
    for scene, per_core in LOADS.items():
        beside(scene, [subprocess.Popen([sys.executable, "-c", SPINNER]) for _ in range(per_core * (os.cpu_count() or 1))])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
