"""How long a learner waits for a graded cell: each named solution graded three times from one
Python process, as a notebook's kernel grades it (the first grading compiles the kernels, later ones
find them in the per-submission cache), with the judge's seconds per stage. With --ahead, as in a
notebook after its set-up cell, a judge is kept started ahead of each grading, and the script waits
THINK_S seconds between gradings (a learner reading the report and editing).

    python tests/gpu/grading_time.py [--ahead] OUT.json act0.vector_add act4.flash_attention
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from autograder import grading, registry, sandbox, source

ROOT = Path(__file__).resolve().parents[2]
GRADINGS = int(os.environ.get("GRADINGS", "3"))
THINK_S = float(os.environ.get("THINK_S", "15"))


def main() -> None:
    ahead = "--ahead" in sys.argv
    arguments = [a for a in sys.argv[1:] if a != "--ahead"]
    out, names = Path(arguments[0]), arguments[1:]
    if ahead:
        sandbox.keep_ready("cuda")
    records = []
    for name in names:
        problem = registry.get(name)
        cells = source.notebook_cells(str(ROOT / "solutions" / f"{problem.notebook}.ipynb"))
        code = source.extract(cells, problem.function)
        for attempt in range(GRADINGS):
            if ahead:
                time.sleep(THINK_S)
            started = time.perf_counter()
            result = grading.grade_source(problem, code, problem.function)
            seconds = time.perf_counter() - started
            record = {
                "problem": name,
                "attempt": attempt,
                "judge_started_ahead": ahead,
                "seconds": round(seconds, 2),
                "status": result["status"],
                "points": result.get("points"),
                "message": result.get("message"),
                "cases": [{k: c.get(k) for k in ("size", "seconds", "split_seconds", "worker_seconds")} for c in result.get("cases", [])],
                "stage_seconds": result.get("stage_seconds"),
                "calibration": result.get("calibration"),
                "switch_us": result.get("switch_us"),
                "speed": [{"size": r["size"], "calls_per_window": r.get("calls_per_window"), "ratio": r.get("ratio"), "copy_fraction": r.get("copy_fraction"), "yours_ms": r["candidate"]["median_ms"], "library_ms": r["library"]["median_ms"], "charged_more": r.get("charged_more")} for r in result.get("speed", [])],
            }
            records.append(record)
            print(json.dumps({k: v for k, v in record.items() if k != "cases"}), flush=True)
            # Written after every grading: a call's time limit that cuts the run keeps what it measured.
            out.write_text(json.dumps({"device": _device(), "gradings": records}, indent=1))
        if os.environ.get("IN_PROCESS"):
            records.append(in_process(problem, code))
            print(json.dumps(records[-1]), flush=True)
            out.write_text(json.dumps({"device": _device(), "gradings": records}, indent=1))


def in_process(problem, code: str) -> dict:
    """The same solution and library timed in this process with triton.testing.do_bench (median,
    L2 flushed between calls by do_bench): what the judge's charges should come close to."""
    import importlib.util
    import tempfile

    import torch
    import triton.testing

    from autograder import arrays

    # Triton reads a kernel's source from its file.
    path = Path(tempfile.mkdtemp()) / f"{problem.function}_solution.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, problem.function)
    rows = []
    for size in problem.bench_sizes:
        inputs = problem.make_inputs(size, 1234, "cuda")
        args = [arrays.to_learner(v, problem.language) for v in inputs.values()]
        yours = triton.testing.do_bench(lambda args=args: fn(*args), warmup=50, rep=300, return_mode="median")
        library = triton.testing.do_bench(lambda inputs=inputs: problem.library(**inputs), warmup=50, rep=300, return_mode="median")
        rows.append({"size": repr(size), "yours_ms": yours, "library_ms": library, "ratio": library / yours})
        torch.cuda.empty_cache()
    return {"problem": problem.name, "in_process": rows}


def _device() -> dict:
    import torch
    import triton

    return {"name": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__, "date": time.strftime("%Y-%m-%d")}


if __name__ == "__main__":
    main()
