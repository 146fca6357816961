"""The verdict pipeline without a GPU: synthetic facts through autograder.verdict.decide (every
verdict and every way to points, floor, honesty and tamper rejections included), the typed result
as it travels between the judge and the notebook, and a report rendered from the result alone."""

from __future__ import annotations

import pytest

from autograder import registry, report, verdict
from autograder.result import CaseResult, Exercise, Honesty, MetricValue, ProblemResult, SpeedRow
from autograder.verdict import Facts, decide

VECTOR_ADD = registry.get("act0.vector_add")
EXERCISE = Exercise.of(VECTOR_ADD)
HONEST = Honesty(ok=True, message="kernels launched: add_kernel")
COPY_BW = 3.0e12


def _gpu_facts(**changes) -> Facts:
    """A correct, honest, measured kernel on a GPU at 60% of copy bandwidth, with ``changes``."""
    facts = dict(
        status="PASS", message="all cases correct", device="cuda", speed_graded=True, timed=True, honesty=HONEST,
        metric=MetricValue("copy_fraction", 0.6),
    )
    return Facts(**{**facts, **changes})


def _points(facts: Facts) -> tuple[float, float]:
    return verdict.points(EXERCISE, decide(facts), VECTOR_ADD.speed_scale)


def test_a_correct_honest_kernel_earns_its_speed_on_the_scale():
    found = decide(_gpu_facts())
    assert found.status is None and found.correct and found.metric.value == 0.6
    correct, speed = _points(_gpu_facts())
    # 0.6 of copy bandwidth on a scale from 0.30 to 0.75.
    assert correct == VECTOR_ADD.correctness_points and speed == pytest.approx(VECTOR_ADD.speed_points * (0.6 - 0.3) / 0.45)


@pytest.mark.parametrize(
    ("changes", "status", "message"),
    [
        ({"wrong_timed_outputs": 3}, "FAIL", "3 timed calls returned a wrong answer"),
        ({"honesty": Honesty(ok=False, message="library kernel ran")}, "REJECT", "library kernel ran"),
        ({"honesty": None}, "REJECT", "were not checked"),
        ({"below_floor": True}, "REJECT", "below the physical floor"),
    ],
    ids=["timed outputs", "honesty", "honesty unchecked", "floor"],
)
def test_what_the_timed_calls_reveal_takes_every_point(changes, status, message):
    found = decide(_gpu_facts(**changes))
    assert found.status == status and message in found.message
    assert _points(_gpu_facts(**changes)) == (0.0, 0.0)


def test_the_checks_apply_in_order_timed_outputs_then_honesty_then_floor():
    liar = Honesty(ok=False, message="library kernel ran")
    assert decide(_gpu_facts(wrong_timed_outputs=1, honesty=liar, below_floor=True)).status == "FAIL"
    assert decide(_gpu_facts(honesty=liar, below_floor=True)).message == "library kernel ran"
    assert [name for name, _ in verdict.CHECKS].index("timed outputs") < [name for name, _ in verdict.CHECKS].index("floor")


def test_a_baseline_the_targets_were_not_set_against_shows_the_speed_and_grades_correctness():
    found = decide(_gpu_facts(baseline_graded=False, baseline_note="SDPA math backend ran here"))
    assert found.status is None and found.speed_note == "SDPA math backend ran here"
    assert _points(_gpu_facts(baseline_graded=False)) == (VECTOR_ADD.correctness_points, 0.0)


@pytest.mark.parametrize(
    ("facts", "status", "points", "note"),
    [
        (Facts("FAIL", "some cases are wrong", "cuda", True), None, 0.0, ""),
        (Facts("ERROR", "your function raised", "cpu", True), None, 0.0, ""),
        (Facts("NEEDS GPU", "runs CuPy kernels", "cpu", True), None, 0.0, "needs a GPU"),
        (Facts("PASS", "all cases correct", "cpu", True, cpu_honesty=Honesty(ok=False, message="ran torch operators")), "REJECT", 0.0, ""),
        (Facts("PASS", "all cases correct", "cpu", True, cpu_honesty=Honesty(ok=True, message="your kernels wrote it")), None, 2.0, "needs a GPU: speed is graded only on a GPU"),
        (Facts("PASS", "all cases correct", "cuda", True), None, 2.0, "speed was not measured"),
        (Facts("PASS", "your answers are right", "cpu", False), None, 2.0, ""),
        (Facts("FAIL", "some answers are wrong", "cpu", False), None, 0.0, ""),
    ],
    ids=["wrong", "error", "needs gpu", "cpu honesty", "cpu pass", "not timed", "exact pass", "exact fail"],
)
def test_every_verdict_without_timed_calls(facts, status, points, note):
    found = decide(facts)
    assert found.status == status and found.speed_note == note
    assert verdict.points(EXERCISE, found, VECTOR_ADD.speed_scale) == (points, 0.0)


# -- the typed result -------------------------------------------------------------------------------
def _judge_row(size: int, fraction: float, wrong: int = 0) -> dict:
    """A benchmark row with every key autograder.speedrows writes."""
    bytes_moved = float(VECTOR_ADD.bytes_moved(size))
    ms = bytes_moved / (fraction * COPY_BW) * 1e3
    timing = {"median_ms": ms, "stderr_ms": ms / 100, "calls": 40}
    return {
        "size": size, "calls_per_window": 4, "candidate": timing, "library": dict(timing), "bytes_moved": bytes_moved, "flops": float(size),
        "floor_ms": bytes_moved / COPY_BW * 1e3, "wrong_timed_outputs": wrong, "extra_libraries": {"cuDNN": dict(timing)},
        "charged_more": {}, "segments_us": {"yours": {"pre_us": 1.0}, "library": {"pre_us": 1.0}},
        "null_us": {"yours": 340.0, "library": 338.0}, "retimed": False,
        "bandwidth": bytes_moved / (ms * 1e-3), "library_bandwidth": bytes_moved / (ms * 1e-3), "ratio": 1.0,
    }


def _judged(rows: list[dict], honesty: Honesty | None = HONEST) -> ProblemResult:
    return ProblemResult(
        problem=VECTOR_ADD.name, status="PASS", message="all cases correct", device="cuda", device_name="a GPU",
        cases=[CaseResult(1, True, max_error=0.0, allowed_error=1e-6, mismatches=[])], speed=[SpeedRow.from_dict(r) for r in rows], honesty=honesty,
        ceilings={"copy": {"bytes_per_s": COPY_BW}, "matmul": {"float32": {"flop_per_s": 5e13}}},
    )


def test_the_result_goes_to_json_and_back_unchanged():
    result = verdict.score(VECTOR_ADD, _judged([_judge_row(1 << 24, 0.6), _judge_row(1 << 26, 0.6)]), "cuda")
    assert ProblemResult.from_dict(result).to_dict() == result
    assert result["speed"][0]["extra_libraries"]["cuDNN"]["ratio"] == pytest.approx(1.0)
    assert result["points"] == pytest.approx(VECTOR_ADD.correctness_points + VECTOR_ADD.speed_points * (0.6 - 0.3) / 0.45, abs=0.01)
    unknown = ProblemResult.from_dict({**result, "a_newer_key": 1})
    assert unknown.extra == {"a_newer_key": 1} and unknown.to_dict()["a_newer_key"] == 1


def test_a_call_or_an_extra_baseline_charged_nothing_is_scored_not_crashed():
    row = _judge_row(1 << 24, 0.6)
    row["extra_libraries"]["cuDNN"]["median_ms"] = 0.0
    result = verdict.score(VECTOR_ADD, _judged([row, _judge_row(1 << 26, 0.6)]), "cuda")
    assert result["status"] == "PASS" and result["speed"][0]["extra_libraries"]["cuDNN"].get("ratio") is None
    row = _judge_row(1 << 24, 0.6)
    row["candidate"]["median_ms"] = 0.0
    result = verdict.score(VECTOR_ADD, _judged([row, _judge_row(1 << 26, 0.6)]), "cuda")
    assert result["status"] == "REJECT" and result["points"] == 0 and result["speed"][0]["below_floor"]


def test_scoring_a_judged_result_applies_the_floor_from_its_rows():
    result = verdict.score(VECTOR_ADD, _judged([_judge_row(1 << 24, 1.5), _judge_row(1 << 26, 0.6)]), "cuda")
    assert result["status"] == "REJECT" and result["points"] == 0
    assert [row["below_floor"] for row in result["speed"]] == [True, False]


def test_scoring_a_tampered_timed_call_fails_it():
    result = verdict.score(VECTOR_ADD, _judged([_judge_row(1 << 24, 0.6, wrong=2)]), "cuda")
    assert result["status"] == "FAIL" and "2 timed calls" in result["message"] and result["points"] == 0


def test_the_report_renders_the_result_without_looking_the_problem_up(monkeypatch):
    scored = verdict.score(VECTOR_ADD, _judged([_judge_row(1 << 24, 0.6), _judge_row(1 << 26, 0.6)]), "cuda")

    def no_lookup(name):
        raise AssertionError(f"the report looked up {name}")

    monkeypatch.setattr(registry, "get", no_lookup)
    text = report.text(scored)
    assert text.splitlines()[0].startswith(f"{VECTOR_ADD.name} - {VECTOR_ADD.title}: PASS")
    assert "60% of copy bandwidth" in text and "cuDNN (ms)" in text and "windows of up to 4 calls" in text
    assert report.roofline_png(scored)[:4] == b"\x89PNG"
