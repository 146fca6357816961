"""Why the grader's timed windows charge Act 6's paged attention 0.35 ms a call when do_bench times the
same kernels at 0.21 ms (H100, 2026-11-25): `python3 tests/gpu/probe_paged_window.py [OUT.json]`.

Times the reference solution at the first benchmark size five ways, each the median of several
windows of CALLS calls between CUDA events, and prints ms a call:
- do_bench on one input (L2 flushed before each call): what the tuning record measured;
- a window of CALLS calls on one input, back to back;
- a window of CALLS calls, each on its own freshly drawn input (as the grader's windows are);
- the same, the inputs made by another process and opened here through CUDA IPC (as the grader's
  shared inputs are);
- the same as the previous window, the GPU first kept idle for 5 ms (as between the grader's windows),
  with the SM clock nvidia-smi reports sampled around it;
- with PROBE_ARENA=1 instead of the rest: the inputs laid out by the grader's own code, all CALLS
  sets in one allocation of the judge's arena (autograder.windows.shared_sets_of), opened here as the
  worker opens them (autograder.shared.open_inputs), beside the same inputs in separate allocations,
  then the same inputs laid out in this process in one driver allocation, one per set, one torch
  allocation, and one driver allocation with 2 MiB alignment (which of them costs the time);
  PROBE_ARENA=per-set gives each set its own arena (allocation and IPC handle) in the judge,
  PROBE_ARENA=round rounds the arena's allocation up to whole 2 MiB, PROBE_ARENA=torch makes it a
  torch allocation shared through its IPC handle.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp
import triton

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gpu.probe_small_calls import solution_module  # noqa: E402

CALLS = 13
WINDOWS = 7
SIZE = (64, 32, 8, 128, 16, 4096)


def window_ms(fn, inputs_list, idle_ms: float = 0.0) -> float:
    times = []
    for _ in range(WINDOWS):
        torch.cuda.synchronize()
        if idle_ms:
            time.sleep(idle_ms / 1e3)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for inputs in inputs_list:
            fn(**inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / len(inputs_list))
    return statistics.median(times)


def sm_clock() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def producer(queue, done) -> None:
    problem, _ = solution_module("act6.paged_attention")
    inputs = [problem.make_inputs(SIZE, 100 + i, "cuda") for i in range(CALLS)]
    torch.cuda.synchronize()
    queue.put(inputs)
    done.wait()


def arena_producer(queue, done) -> None:
    from autograder import shared, windows

    problem, _ = solution_module("act6.paged_attention")
    private = problem.make_inputs(SIZE, 100, "cuda")
    variant = os.environ.get("PROBE_ARENA")
    if variant == "round":
        reserve = shared.Arena.reserve
        shared.Arena.reserve = lambda self, nbytes: reserve(self, -(-nbytes // (2 << 20)) * (2 << 20))
    if variant == "torch":
        tensors, descriptors, _ = windows.shared_sets_of(private, CALLS, "cuda", arena=_TorchArena(shared=True))
    elif variant == "per-set":
        made = [windows.shared_sets_of(private, 1, "cuda", arena=shared.Arena()) for _ in range(CALLS)]
        tensors, descriptors = [m[0][0] for m in made], [m[1][0] for m in made]
    else:
        tensors, descriptors, _ = windows.shared_sets_of(private, CALLS, "cuda", arena=shared.Arena())
    for index, set_tensors in enumerate(tensors):
        fresh = problem.make_inputs(SIZE, 200 + index, "cuda")
        for name, tensor in set_tensors.items():
            tensor.copy_(fresh[name])
    torch.cuda.synchronize()
    queue.put(descriptors)
    done.wait()


def arena_main() -> None:
    from autograder import shared

    problem, module = solution_module("act6.paged_attention")
    fn = module.paged_attention
    context = mp.get_context("spawn")
    queue, done = context.Queue(), context.Event()
    child = context.Process(target=arena_producer, args=(queue, done))
    child.start()
    opened = [shared.open_inputs(described, "cuda") for described in queue.get(timeout=300)]
    window_ms(fn, opened[:1])
    rows = {"device": torch.cuda.get_device_name(0), "calls_per_window": CALLS}
    rows["window_grader_arena_inputs_ms"] = window_ms(fn, opened)
    separate = [{name: value.clone() if isinstance(value, torch.Tensor) else value for name, value in inputs.items()} for inputs in opened]
    rows["window_same_inputs_separate_allocations_ms"] = window_ms(fn, separate)
    rows["window_grader_arena_inputs_again_ms"] = window_ms(fn, opened)
    rows["window_grader_arena_first_set_13_times_ms"] = window_ms(fn, [opened[0]] * CALLS)
    del opened
    done.set()
    child.join(timeout=60)
    if os.environ.get("PROBE_ARENA") == "1":
        rows.update(layout_rows(problem, fn, separate))
    return rows


class _TorchBlock:
    """One torch allocation standing in for the judge's driver-allocated block (with ``shared``, its
    IPC handle: a request this large is a segment of its own, so the tensor starts at its base)."""

    def __init__(self, nbytes: int, shared: bool) -> None:
        from autograder import cuda_driver

        self.storage = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        self.ptr, self.nbytes, self.handle = self.storage.data_ptr(), nbytes, None
        if shared:
            assert cuda_driver.allocation_of(self.ptr)[0] == self.ptr
            self.handle = cuda_driver.ipc_handle(self.ptr)


class _TorchArena:
    def __init__(self, shared: bool = False) -> None:
        self.shared = shared

    def reserve(self, nbytes: int):
        return _TorchBlock(nbytes, self.shared)


def _filled(sets: list[dict], inputs_list: list[dict]) -> list[dict]:
    for tensors, inputs in zip(sets, inputs_list, strict=True):
        for name, tensor in tensors.items():
            tensor.copy_(inputs[name])
    return [{**inputs, **tensors} for tensors, inputs in zip(sets, inputs_list, strict=True)]


def layout_rows(problem, fn, separate: list[dict]) -> dict:
    """Which property of the judge's arena costs the time, each layout filled with the same inputs in
    this process (no IPC): all sets in one driver allocation (cuMemAlloc, as the judge's arena), each
    set in its own driver allocation, all sets in one torch allocation, and the first layout with each
    tensor at a 2 MiB boundary instead of 512 bytes."""
    from autograder import shared, windows

    private = separate[0]
    rows = {}
    layouts = {
        "one_driver_allocation": lambda: windows.shared_sets_of(private, CALLS, "cuda", arena=shared.Arena())[0],
        "driver_allocation_per_set": lambda: [windows.shared_sets_of(private, 1, "cuda", arena=shared.Arena())[0][0] for _ in range(CALLS)],
        "one_torch_allocation": lambda: windows.shared_sets_of(private, CALLS, "cuda", arena=_TorchArena())[0],
    }
    for name, make in layouts.items():
        sets = make()
        rows[f"window_local_{name}_ms"] = window_ms(fn, _filled(sets, separate))
        del sets
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    default_align = shared.ALIGN
    shared.ALIGN = 2 << 20
    try:
        sets = layouts["one_driver_allocation"]()
        rows["window_local_one_driver_allocation_2mib_aligned_ms"] = window_ms(fn, _filled(sets, separate))
    finally:
        shared.ALIGN = default_align
    rows["window_separate_allocations_again_ms"] = window_ms(fn, separate)
    return rows


def main() -> None:
    if os.environ.get("PROBE_ARENA"):
        rows = arena_main()
        for key, value in rows.items():
            print(f"{key:45s} {value:.4f}" if isinstance(value, float) else f"{key:45s} {value}")
        if len(sys.argv) > 1:
            Path(sys.argv[1]).write_text(json.dumps(rows, indent=1))
        return
    problem, module = solution_module("act6.paged_attention")
    fn = module.paged_attention
    one = problem.make_inputs(SIZE, 1, "cuda")
    fresh = [problem.make_inputs(SIZE, 10 + i, "cuda") for i in range(CALLS)]
    window_ms(fn, [one])
    rows = {"device": torch.cuda.get_device_name(0), "calls_per_window": CALLS}
    rows["do_bench_one_input_ms"] = triton.testing.do_bench(lambda: fn(**one))
    rows["window_one_input_ms"] = window_ms(fn, [one] * CALLS)
    rows["window_fresh_inputs_ms"] = window_ms(fn, fresh)
    del fresh
    torch.cuda.empty_cache()
    context = mp.get_context("spawn")
    queue, done = context.Queue(), context.Event()
    child = context.Process(target=producer, args=(queue, done))
    child.start()
    shared = queue.get(timeout=300)
    rows["window_ipc_inputs_ms"] = window_ms(fn, shared)
    rows["sm_mem_clock_before_idle"] = sm_clock()
    rows["window_ipc_inputs_after_5ms_idle_ms"] = window_ms(fn, shared, idle_ms=5.0)
    rows["sm_mem_clock_after"] = sm_clock()
    del shared
    done.set()
    child.join(timeout=60)
    for key, value in rows.items():
        print(f"{key:40s} {value:.4f}" if isinstance(value, float) else f"{key:40s} {value}")
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
