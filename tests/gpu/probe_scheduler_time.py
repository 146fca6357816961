"""Exercise 6.4's throughput on this GPU: the reference scheduler against static batching on the hidden
trace, graded in time (the engine replaying both schedules on the tiny model on the GPU) and, beside
it, in model-step times (what a CPU grades). Prints both ratios and tokens/s and writes them as JSON.

    python3 tests/gpu/probe_scheduler_time.py OUT.json [ROUNDS]

ROUNDS (default 3) repeats the whole measurement, each a fresh ``play`` as a grading runs it, so the
spread of the time ratio shows; then one grading through the judge (autograder.grading), as a learner's
graded cell runs it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from autograder import grading, registry, source  # noqa: E402
from autograder.problems.act6 import scheduler as sched  # noqa: E402

SOLUTION = ROOT / "solutions" / "act6-serving" / "scheduler.ipynb"


def solution_code() -> str:
    return source.extract(source.notebook_cells(str(SOLUTION)), "Scheduler")


def solution_class():
    namespace: dict = {}
    exec(compile(solution_code(), str(SOLUTION), "exec"), namespace)
    return namespace["Scheduler"]


def step_costs() -> dict:
    """Microseconds per engine step (each synchronised, so not the graded timing) by kind of step
    (decode only, prefill only, both) for each schedule of the hidden trace: where the time ratio
    parts from the ratio of step counts."""
    from autograder.problems.act6 import slots
    from autograder.problems.act6.batching_engine import Engine, Replay

    requests, model = sched.hidden_trace(), sched._model("cuda")
    runs = {"static": sched.static_baseline(requests), "reference": Engine(requests).run(sched._Local(solution_class()))}
    step, costs = slots.SlotRunner.step, {}

    def timed(self, decode, prefill):
        torch.cuda.synchronize()
        started = time.perf_counter()
        out = step(self, decode, prefill)
        torch.cuda.synchronize()
        kind = "decode+prefill" if decode and prefill else "decode" if decode else "prefill"
        costs.setdefault(kind, []).append(1e6 * (time.perf_counter() - started))
        return out

    found = {}
    slots.SlotRunner.step = timed
    try:
        engine = Engine(requests, model)
        for name, ran in runs.items():
            for _ in range(2):  # the first is a warm-up
                costs.clear()
                engine.run(Replay(ran["plans"]))
            found[name] = {kind: {"steps": len(v), "mean_us": sum(v) / len(v), "min_us": min(v)} for kind, v in costs.items()}
    finally:
        slots.SlotRunner.step = step
    return found


def measure(rounds: int = 3) -> dict:
    problem = registry.get("act6.scheduler")
    plays = []
    for _ in range(rounds):
        started = time.perf_counter()
        outcome = problem.play(sched._Local(solution_class()), 0, "cuda")
        m = outcome["measured"]
        plays.append({
            "passed": all(c["passed"] for c in outcome["cases"]),
            "time_ratio": m.get("time_ratio"),
            "step_ratio": m["step_ratio"],
            "tokens_per_s": m.get("tokens_per_s"),
            "static_tokens_per_s": m.get("static_tokens_per_s"),
            "replay_equal": m.get("replay_equal"),
            "speed_fraction": outcome["speed_fraction"],
            "play_s": time.perf_counter() - started,
            "note": outcome["speed_note"],
        })
        print(json.dumps(plays[-1]), flush=True)
    graded = grading.grade_source(problem, solution_code(), "Scheduler", device="cuda")
    return {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "hidden_trace": {"requests": len(sched.hidden_trace()), "tokens": sum(q.max_new for q in sched.hidden_trace())},
        "targets": {"zero_at": sched.ZERO_AT, "full_at": sched.FULL_AT, "solution_target": sched.SOLUTION_TARGET},
        "plays": plays,
        "step_costs_us": step_costs(),
        "time_ratio_min": min(p["time_ratio"] for p in plays),
        "step_ratio": plays[0]["step_ratio"],
        "grading": {"status": graded["status"], "points": graded["points"], "max_points": graded.get("max_points"), "speed_note": graded.get("speed_note"), "measured": graded.get("measured")},
    }


def main() -> None:
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU: on a CPU exercise 6.4 is graded in model-step times only")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("scheduler_time.json")
    found = measure(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    out.write_text(json.dumps(found, indent=2) + "\n")
    print(json.dumps(found["step_costs_us"]))
    print(f"{found['device']}: time ratio {found['time_ratio_min']:.2f}x (graded on a GPU; lowest of {len(found['plays'])} plays), "
          f"model-step ratio {found['step_ratio']:.2f}x; reference {found['plays'][0]['tokens_per_s']:,.0f} tokens/s against "
          f"static batching's {found['plays'][0]['static_tokens_per_s']:,.0f}; grading {found['grading']['status']} "
          f"{found['grading']['points']}/{found['grading']['max_points']}; written to {out}")


if __name__ == "__main__":
    main()
