"""Predict, then measure (act2.predict_cost, act2.predict_time): the exact cases are clear-cut, and the
measured judge, given synthetic grader times, applies its thresholds (within 1.5x, ten times the
roofline time for overhead), refuses a time that is not the arithmetic of the prediction's own counts,
and on a GPU the judge runs a prediction's learner with no GPU visible. The GPU run grades the same
function on the real operations (the submissions beside the problems)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder import registry
from autograder.problems.act2 import predictions

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "act2-rooflines" / "predict_time.ipynb"
TIME = registry.get("act2.predict_time")
COST = registry.get("act2.predict_cost")
# A made-up GPU: 500 TFLOP/s, 2 TB/s.
PEAK, BANDWIDTH = 500e12, 2e12


@pytest.fixture(scope="module")
def predict():
    namespace: dict = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        if cell["cell_type"] == "code" and cell["metadata"].get("nbgrader", {}).get("solution"):
            exec("".join(cell["source"]), namespace)
    return namespace["predict"]


def _op(kind: str):
    """The exercise's operation of this kind (the large one when there are two)."""
    return next(op for op in TIME.make_ops("cpu") if op.operation["op"] == kind)


def _small(kind: str):
    return [op for op in TIME.make_ops("cpu") if op.operation["op"] == kind][-1]


def _judge(got, op, ratio: float):
    """The judge on a grader time of ``ratio`` times the operation's roofline time."""
    bound = predictions.roofline_seconds(op.flops, op.bytes_moved, PEAK, BANDWIDTH)
    return TIME.judge(got, op, PEAK, BANDWIDTH, {"once": ratio * bound, "doubled": None})


def test_the_solution_passes_where_the_roofline_holds_and_where_it_does_not(predict):
    for op in TIME.make_ops("cpu"):
        ratio = 50.0 if op.bytes_moved < 1e6 else 1.1
        passed, message = _judge(predict(op.operation, PEAK, BANDWIDTH), op, ratio)
        assert passed, (op.name, message)
        assert ("within 1.5x" in message) == (ratio == 1.1)


def test_an_operation_short_of_its_roof_is_still_bound_by_it(predict):
    transpose = _op("transpose")
    passed, message = _judge(predict(transpose.operation, PEAK, BANDWIDTH), transpose, 4.0)
    assert passed and "memory" in message and "reaches 25% of its memory roof" in message
    passed, message = _judge(dict(predict(transpose.operation, PEAK, BANDWIDTH), limit="overhead"), transpose, 4.0)
    assert not passed and "says 'memory'" in message


def test_overhead_begins_at_ten_times_the_roofline_time(predict):
    small = _small("add")
    said = predict(small.operation, PEAK, BANDWIDTH)
    assert said["limit"] == "overhead"
    assert _judge(said, small, 10.0)[0] and _judge(said, small, 400.0)[0]
    passed, message = _judge(said, small, 9.0)
    assert not passed and "says 'memory'" in message
    passed, message = _judge(dict(said, limit="memory"), small, 400.0)
    assert not passed and "says 'overhead'" in message and "400.0x" in message


def test_the_large_add_called_compute_bound_fails_on_any_measurement(predict):
    add = _op("add")
    for ratio in (1.0, 3.0):
        passed, message = _judge(dict(predict(add.operation, PEAK, BANDWIDTH), limit="compute"), add, ratio)
        assert not passed and "says 'memory'" in message


def test_a_measured_time_is_no_prediction(predict):
    matmul = _op("matmul")
    said = predict(matmul.operation, PEAK, BANDWIDTH)
    passed, message = _judge(dict(said, seconds=said["seconds"] * 1.08), matmul, 1.08)
    assert not passed and "a prediction is that arithmetic" in message
    passed, message = _judge(dict(said, seconds=said["seconds"] * (1 + 1e-12)), matmul, 1.0)
    assert passed, message


def test_counts_are_checked_exactly_before_any_time(predict):
    add = _op("add")
    said = predict(add.operation, PEAK, BANDWIDTH)
    one_operand = dict(said, bytes=said["bytes"] * 2 // 3, seconds=said["seconds"] * 2 / 3)
    passed, message = _judge(one_operand, add, 1.0)
    assert not passed and message.startswith("bytes is") and f"{said['bytes']:,}" in message
    assert not _judge({"bytes": said["bytes"]}, add, 1.0)[0]
    assert not _judge(dict(said, limit="latency"), add, 1.0)[0]


def test_every_case_of_the_exact_half_is_clear_cut_and_holds_the_six_operations():
    for seed in range(60):
        cases = COST.make_cases(seed)
        assert [c["operation"] for c in cases[: len(predictions.OPERATIONS)]] == list(predictions.OPERATIONS)
        for case in cases:
            seconds = COST.reference(**case)["seconds"]
            assert seconds < predictions.SURE_SMALL_S or seconds > predictions.SURE_LARGE_S, case
    limits = {COST.reference(**c)["limit"] for seed in range(20) for c in COST.make_cases(seed)}
    assert limits == set(predictions.LIMITS)


def test_the_exact_half_judges_counts_time_and_limit(predict):
    for case in COST.make_cases(3):
        expected = COST.reference(**case)
        assert COST.judge(predict(**case), expected, case) is None
        assert "limit is" in COST.judge(dict(expected, limit="overhead" if expected["limit"] != "overhead" else "memory"), expected, case)


def test_the_operations_are_built_only_when_called():
    ops = TIME.make_ops("cpu")
    assert [op.operation for op in ops] == list(predictions.OPERATIONS)
    for op in ops:
        counted = predictions.counts(op.operation)
        assert (op.flops, op.bytes_moved, op.dtype) == (float(counted["flops"]), float(counted["bytes"]), "float16")
    small = _small("matmul")
    assert tuple(small.call().shape) == (64, 64)


def test_only_a_problem_that_hands_over_no_operation_predicts():
    assert TIME.predicts and "predictions" in TIME.needs_gpu_reason
    assert TIME.compute_dtype == "float16"
    for name in ("act2.measure_point", "act2.classify_op"):
        assert not registry.get(name).predicts and registry.get(name).compute_dtype == "float32"


def test_a_predictions_learner_runs_with_no_gpu_visible(monkeypatch, tmp_path):
    """On a GPU the judge's workers start before the job is known; for a prediction the learner's is
    started again on the CPU (CUDA_VISIBLE_DEVICES empty), the trusted helper spared; a measurement
    keeps its GPU worker."""
    from autograder import judge_grading, session

    started, ended = [], []

    class FakeSession:
        def __init__(self, role, device, *where, **options):
            started.append((role, device))
            self.process = SimpleNamespace(pid=100 + len(started))

        def end(self, spare=()):
            ended.append((self.process.pid, spare))

    monkeypatch.setattr(session, "Session", FakeSession)
    monkeypatch.setattr(judge_grading.Grading, "_configure", lambda self, worker, *args: worker)
    module = tmp_path / "submission.py"
    module.write_text("def predict(operation, peak_flops, bandwidth):\n    return {}\n")
    for problem, device_after in (("act2.predict_time", "cpu"), ("act2.measure_point", "cuda")):
        started.clear()
        ended.clear()
        workers = session.Workers(str(tmp_path / problem), "cuda", helper=True, warm_profiler=False)
        job = {"device": "cuda", "timeout": 60, "workdir": str(tmp_path), "module": str(module), "entry": "predict", "language": "python", "problem": problem, "kind": "measured"}
        judge_grading.Grading(job, workers)
        assert started[-1 if device_after == "cpu" else 0] == ("learner", device_after)
        assert sum(1 for role, _ in started if role == "learner") == (2 if device_after == "cpu" else 1)
        if device_after == "cpu":
            assert ended[0] == (101, (102,)), ended
    assert session.worker_env(str(tmp_path), "cpu")["CUDA_VISIBLE_DEVICES"] == ""
