"""On a GPU: exercise 6.4's throughput is graded in time. The reference scheduler, graded as a GPU
grading plays it, reaches full marks and its target against static batching in tokens/s, and the
engine's timed replay gives the same tokens as the graded run (tests/gpu/probe_scheduler_time.py
prints the same numbers for a person to read)."""

from __future__ import annotations

import pytest

from autograder import grading, registry
from autograder.problems.act6 import scheduler as sched
from tests.gpu.probe_scheduler_time import solution_class, solution_code

pytestmark = pytest.mark.gpu
SCHEDULER = registry.get("act6.scheduler")


def test_the_reference_scheduler_reaches_its_target_in_time():
    outcome = SCHEDULER.play(sched._Local(solution_class()), 0, "cuda")
    m = outcome["measured"]
    print(f"\ntime ratio {m['time_ratio']:.2f}x, model-step ratio {m['step_ratio']:.2f}x, "
          f"{m['tokens_per_s']:,.0f} tokens/s against static batching's {m['static_tokens_per_s']:,.0f}")
    assert all(c["passed"] for c in outcome["cases"]), outcome["cases"]
    assert m["replay_equal"], "the timed replay did not give the graded run's tokens"
    assert m["throughput_ratio"] == m["time_ratio"] and "graded in time" in outcome["speed_note"]
    assert outcome["speed_fraction"] == 1.0, outcome["speed_note"]
    assert m["time_ratio"] >= sched.SOLUTION_TARGET, outcome["speed_note"]


def test_static_batching_earns_no_points_in_time_either():
    outcome = SCHEDULER.play(sched._Local(sched.StaticBatching), 0, "cuda")
    assert outcome["measured"]["time_ratio"] == pytest.approx(1.0, abs=0.15), outcome["speed_note"]
    assert outcome["speed_fraction"] < 0.3, outcome["speed_note"]


def test_the_graded_cell_grades_the_scheduler_in_time():
    result = grading.grade_source(SCHEDULER, solution_code(), "Scheduler", device="cuda")
    assert result["status"] == "PASS" and result["points"] == SCHEDULER.max_points, result["message"]
    assert "tokens/s" in result["speed_note"] and "model-step times" in result["speed_note"], result["speed_note"]
