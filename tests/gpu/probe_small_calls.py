"""Short calls timed in the grader's own process with triton.testing.do_bench (median, L2 flushed),
beside the profiler's kernel time of one call and the host time to launch 32 calls while the GPU is
held busy (plain, and under the worker's profiler, autograder.watch): the reference solutions of
Act 7's int4 GEMV and Act 8's fused layer and decode step, and the libraries they are compared
with. Read against the judge's charge for the same calls (their graded results) when the two
disagree. Prints one JSON line per call."""

from __future__ import annotations

import importlib.util
import json
import tempfile
import time
from pathlib import Path

import torch
import triton.testing
from torch.profiler import ProfilerActivity, profile

from autograder import registry, source
from autograder.watch import Watch

ROOT = Path(__file__).resolve().parents[2]


def solution_module(name: str):
    """The problem and its reference solution, imported as a module (Triton reads a kernel's source
    from its file, so the solution cells are written to one first)."""
    problem = registry.get(name)
    cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
    path = Path(tempfile.mkdtemp()) / f"{problem.function}_solution.py"
    path.write_text(source.extract(cells, problem.function, getattr(problem, "also_needs", ())))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return problem, module


def launch_us(call, watched: bool, calls: int = 32) -> float:
    """Host microseconds per call to queue ``calls`` calls behind a long GPU sleep (nothing waits for
    the GPU), as a timed window's calls are queued behind the judge's go flag."""
    watch = Watch("cuda") if watched else None
    if watch:
        watch.start()
    torch.cuda._sleep(2_000_000_000)
    started = time.perf_counter()
    for _ in range(calls):
        call()
    seconds = time.perf_counter() - started
    torch.cuda.synchronize()
    if watch:
        watch.stop()
    return round(1e6 * seconds / calls, 1)


def kernel_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in prof.key_averages()) if prof.key_averages() else 0.0


def describe_us() -> dict:
    """Host microseconds per output to describe 32 fresh outputs for the judge (autograder.shared),
    with the IPC handles fetched from the driver and then from the worker's cache."""
    from autograder import cuda_driver, shared

    outputs = [torch.empty(4096, device="cuda") for _ in range(32)]
    timings = {}
    for label in ("driver", "cached"):
        started = time.perf_counter()
        for out in outputs:
            if label == "driver":
                cuda_driver._HANDLES.clear()
            shared.describe_output(out)
        timings[label] = round(1e6 * (time.perf_counter() - started) / len(outputs), 1)
    return timings


def main() -> None:
    print(json.dumps({"describe_output_us": describe_us()}), flush=True)
    for name in ("act7.int4_gemv", "act8.decode_layer", "act8.decode_step"):
        problem, module = solution_module(name)
        fn = getattr(module, problem.function)
        for size in problem.bench_sizes:
            inputs = problem.make_inputs(size, 1, "cuda")
            functions = {"yours": fn, "library": problem.library, **dict(problem.extra_libraries)}
            for label, function in functions.items():
                def call(function=function, inputs=inputs):
                    return function(**inputs)

                median_ms = triton.testing.do_bench(call, warmup=50, rep=300, return_mode="median")
                print(json.dumps({
                    "problem": name, "size": repr(size), "call": label, "do_bench_us": round(median_ms * 1e3, 2), "profiled_kernel_us": round(kernel_us(call), 2),
                    "launch_us": launch_us(call, False), "launch_us_watched": launch_us(call, True),
                }), flush=True)


if __name__ == "__main__":
    main()
