"""Short calls timed in the grader's own process with triton.testing.do_bench (median, L2 flushed),
beside the profiler's kernel time of one call: the reference solutions of Act 7's int4 GEMV and
Act 8's decode step, the libraries they are compared with. Read against the judge's charge for
the same calls (their graded results) when the two disagree. Prints one JSON line per call."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import triton.testing
from torch.profiler import ProfilerActivity, profile

from autograder import registry, source

ROOT = Path(__file__).resolve().parents[2]


def solution(name: str):
    problem = registry.get(name)
    cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
    namespace: dict = {}
    exec(source.extract(cells, problem.function, getattr(problem, "also_needs", ())), namespace)
    return problem, namespace[problem.function]


def kernel_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in prof.key_averages()) if prof.key_averages() else 0.0


def main() -> None:
    for name in ("act7.int4_gemv", "act8.decode_step"):
        problem, fn = solution(name)
        for size in problem.bench_sizes:
            inputs = problem.make_inputs(size, 1, "cuda")
            functions = {"yours": fn, "library": problem.library, **dict(problem.extra_libraries)}
            for label, function in functions.items():
                def call(function=function, inputs=inputs):
                    return function(**inputs)

                median_ms = triton.testing.do_bench(call, warmup=50, rep=300, return_mode="median")
                print(json.dumps({"problem": name, "size": repr(size), "call": label, "do_bench_us": round(median_ms * 1e3, 2), "profiled_kernel_us": round(kernel_us(call), 2)}), flush=True)


if __name__ == "__main__":
    main()
