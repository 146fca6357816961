"""Act 3's Python exercises: the trace rule on hand-made traces and on seeded ones with the traps of
real traces, the judge of a real GPU profile (fed summaries here; the GPU run grades the real
workloads), and the compile exercise's judge and harness."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from autograder import compiled, exact, grading, measured, profiles, registry
from autograder.problems.act3 import compile_stream, profiling
from autograder.result import ProblemResult

ROOT = Path(__file__).resolve().parent.parent
SUMMARIZE = registry.get("act3.summarize_trace")
READ = registry.get("act3.read_trace")
COMPILE = registry.get("act3.compile_stream")
GEMM, ADD = "ampere_sgemm_128x64_tn", "void at::native::vectorized_elementwise_kernel<4>"


def _solution(name: str) -> dict:
    # A module's namespace, builtins included, as Dynamo expects of the frames it traces.
    namespace = types.ModuleType(f"solution_{name}").__dict__
    for cell in json.loads((ROOT / "solutions" / "act3-profiling" / f"{name}.ipynb").read_text())["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        # The learner's cells and the code the task gives them (the block with breaks, its imports).
        if cell["cell_type"] == "code" and (meta.get("solution") or meta.get("grade_id", "").endswith("_given")):
            exec("".join(cell["source"]), namespace)
    return namespace


def _x(cat, name, ts, dur, tid=7):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": tid}


def _hand_trace() -> dict:
    """Step from 100 to 150 on the CPU; kernels until 190, two of them overlapping on two streams;
    a warm-up kernel before the step and the GPU's copy of the range, both to be ignored."""
    return {"traceEvents": [
        {"ph": "M", "name": "process_name", "ts": 0, "pid": 0, "tid": 0, "args": {}},
        _x("kernel", GEMM, 10, 80),
        _x("gpu_user_annotation", "step", 20, 5),
        _x("user_annotation", "step", 100, 50),
        _x("cpu_op", "aten::mm", 101, 10),
        _x("kernel", GEMM, 110, 40),
        _x("kernel", ADD, 130, 30, tid=13),
        _x("gpu_memcpy", "Memcpy DtoD", 175, 15),
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 3, "ts": 110, "pid": 0, "tid": 7},
    ]}


def test_the_rule_on_a_hand_made_trace():
    # Span 100..190 = 90 us; busy: 110..160 (the two overlapping kernels, once) and 175..190 = 65 us.
    summary = profiles.summarize_trace(_hand_trace(), top=5)
    assert summary["top_kernels"] == [[GEMM, 40], [ADD, 30]]
    assert summary["idle_share"] == pytest.approx(1 - 65 / 90)
    assert summary["regime"] == "compute"
    assert profiles.busy_time([(0, 10), (5, 20), (30, 40), (32, 35)]) == 30


def test_a_trace_without_a_step_says_how_to_mark_one():
    with pytest.raises(ValueError, match="record_function"):
        profiles.summarize_trace({"traceEvents": [_x("kernel", GEMM, 0, 1)]}, top=3)


def test_the_seeded_traces_cover_every_regime_and_the_traps():
    cases = SUMMARIZE.make_cases(2024)
    regimes = {profiles.summarize_trace(**c)["regime"] for c in cases}
    assert regimes == {"overhead", "memory", "compute"}
    events = [e for c in cases[1:] for e in c["trace"]["traceEvents"]]
    assert {e["cat"] for e in events if "cat" in e} >= {"kernel", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cpu_op", "ac2g"}
    assert {e["tid"] for e in events if e.get("cat") == "kernel"} == {7, 13}
    assert all("step" in exact.describe_case(c, SUMMARIZE) or "trace of" in exact.describe_case(c, SUMMARIZE) for c in cases)


def test_the_solution_agrees_and_plausible_mistakes_do_not():
    solution = _solution("read_trace")["summarize_trace"]
    assert all(c["passed"] for c in exact.check_cases(SUMMARIZE, solution, seed=7))

    def summed(trace, top):
        # Overlapping kernels counted twice.
        got = solution(trace, top)
        events = trace["traceEvents"]
        start, end = profiles.step_window(events)
        got["idle_share"] = 1 - sum(e["dur"] for e in profiles.device_events(events, start)) / (end - start)
        return got

    def cpu_end(trace, top):
        # The span ends where the CPU's range ends, before the GPU has finished.
        got = solution(trace, top)
        step = next(e for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
        events = profiles.device_events(trace["traceEvents"], step["ts"])
        got["idle_share"] = 1 - profiles.busy_time([(e["ts"], min(e["ts"] + e["dur"], step["ts"] + step["dur"])) for e in events]) / step["dur"]
        return got

    def with_copies(trace, top):
        # Copies and memsets ranked among the kernels.
        for e in trace["traceEvents"]:
            if e.get("cat") in ("gpu_memcpy", "gpu_memset"):
                e["cat"] = "kernel"
        return solution(trace, top)

    for wrong in (summed, cpu_end, with_copies):
        assert not all(c["passed"] for c in exact.check_cases(SUMMARIZE, wrong, seed=7)), wrong.__name__


def _evidence() -> dict:
    return {"all_kernels": {GEMM: 900.0, ADD: 300.0, "reduce_kernel": 100.0, "copy_kernel": 90.0}, "idle_share": 0.08, "regime": "compute", "matmul_share": 900 / 1390}


def _answer(**changes) -> dict:
    answer = {"top_kernels": [[GEMM, 880.0], [ADD, 310.0], ["reduce_kernel", 105.0]], "idle_share": 0.12, "regime": "compute"}
    return {**answer, **changes}


@pytest.mark.parametrize(
    "answer, passes, says",
    [
        (_answer(), True, "idle 12%"),
        (_answer(top_kernels=[[GEMM, 880.0], [ADD, 310.0], ["copy_kernel", 95.0]]), True, "idle"),
        (_answer(idle_share=0.6), False, "idle share"),
        (_answer(regime="memory"), False, "you said 'memory'"),
        (_answer(top_kernels=[["aten::mm", 880.0], [ADD, 310.0], ["reduce_kernel", 105.0]]), False, "did not run"),
        (_answer(top_kernels=[[GEMM, 8800.0], [ADD, 310.0], ["reduce_kernel", 105.0]]), False, "you measured"),
        (_answer(top_kernels=[[ADD, 310.0], ["reduce_kernel", 105.0], ["copy_kernel", 95.0]]), False, "not the top kernels"),
        (_answer(top_kernels=[[GEMM, 880.0], [GEMM, 880.0], [ADD, 310.0]]), False, "twice"),
        (_answer(top_kernels=[]), False, "top_kernels must list"),
        ({"idle_share": 0.1}, False, "summarize_trace's dict"),
    ],
)
def test_a_profile_reading_is_judged_against_the_graders_own(answer, passes, says):
    passed, message = profiling.judge_profile(answer, None, 0.0, 0.0, _evidence())
    assert passed is passes and says in message, message


def test_near_a_threshold_either_side_is_accepted_and_far_from_it_only_one():
    near_idle = {"idle_share": 0.54, "matmul_share": 0.9, "regime": "overhead"}
    assert profiles.regimes_within(near_idle, 0.075, 0.1) == {"overhead", "compute"}
    near_share = {"idle_share": 0.1, "matmul_share": 0.45, "regime": "memory"}
    assert profiles.regimes_within(near_share, 0.075, 0.1) == {"memory", "compute"}
    assert profiles.regimes_within({"idle_share": 0.8, "matmul_share": 0.45, "regime": "overhead"}, 0.075, 0.1) == {"overhead"}
    assert profiles.regimes_within({"idle_share": 0.05, "matmul_share": 0.95, "regime": "compute"}, 0.075, 0.1) == {"compute"}


def test_the_measured_path_hands_the_step_over_and_judges_with_the_graders_evidence():
    calls = []
    op = measured.MeasuredOp("a step", lambda: calls.append(1), flops=0.0, bytes_moved=0.0)
    problem = dataclasses.replace(READ, make_ops=lambda device: [op], measure=lambda op, device: _evidence())

    def read_trace(step):
        step()
        return _answer()

    cases = measured.check(problem, read_trace, "cpu", {"copy": {"bytes_per_s": 1e10}, "matmul": {"float32": {"flop_per_s": 1e11}}})
    assert [c["passed"] for c in cases] == [True] and calls == [1]


def test_read_trace_needs_a_gpu_and_says_what_a_cpu_grades_instead():
    result = grading.grade_source(READ, "def read_trace(step):\n    return {}\n", "read_trace", device="cpu")
    assert result["status"] == "NEEDS GPU" and result["points"] == 0
    assert "summarize_trace is graded instead" in result["message"]


# --- 3.3: compile without recompiling -------------------------------------------------------------


def _stream(seed=3):
    return compile_stream.make_stream(seed)


def _outputs(stream, block) -> bytes:
    return b"".join(block(x.astype(np.float64), stream["weight"].astype(np.float64)).astype(np.float32).tobytes() for x in stream["xs"])


def _facts(stream, bucket, graphs=None, breaks=0) -> dict:
    padded = [bucket(x.shape[0]) for x in stream["xs"]]
    return {"padded": padded, "graph_breaks": breaks, "unique_graphs": len(set(padded)) if graphs is None else graphs}


def _verdicts(stream, facts, data) -> dict:
    return {c["size"]: c for c in compiled.judge_stream(COMPILE, stream, facts, data)}


def test_the_stream_has_the_extremes_and_the_solution_policy_meets_both_bounds():
    bucket = _solution("compile_stream")["bucket_length"]
    for seed in range(50):
        lengths = [x.shape[0] for x in _stream(seed)["xs"]]
        assert min(lengths) == 1 and max(lengths) == compile_stream.MAX_LENGTH
        padded = [bucket(n) for n in lengths]
        assert len(set(padded)) <= COMPILE.max_compiles
        assert (sum(padded) - sum(lengths)) / sum(lengths) <= 0.8 * COMPILE.max_padding_waste


def test_the_judge_passes_the_right_stream_and_names_each_broken_bound():
    stream = _stream()
    good = _solution("compile_stream")["bucket_length"]
    data = _outputs(stream, compile_stream.attention_block)
    assert all(c["passed"] for c in _verdicts(stream, _facts(stream, good), data).values())
    assert not _verdicts(stream, _facts(stream, lambda n: n), data)["compiles"]["passed"]
    assert not _verdicts(stream, _facts(stream, lambda n: 512), data)["padding waste"]["passed"]
    assert not _verdicts(stream, _facts(stream, lambda n: max(16, 1 << (n - 1).bit_length())), data)["padding waste"]["passed"]
    assert not _verdicts(stream, _facts(stream, good, breaks=2), data)["graph breaks"]["passed"]
    escaped = _verdicts(stream, _facts(stream, good, graphs=0), data)["compiles"]
    assert not escaped["passed"] and "exactly once" in escaped["message"]


def test_the_judge_catches_outputs_that_the_padding_changed():
    stream = _stream()
    bucket = _solution("compile_stream")["bucket_length"]

    def unmasked(x, weight):
        # What an unmasked block computes on a real row: the padded zero rows are keys too.
        padded = np.zeros((bucket(x.shape[0]), x.shape[1]))
        padded[: x.shape[0]] = x
        mean = padded.mean(-1, keepdims=True)
        h = np.clip((padded - mean) / np.sqrt(padded.var(-1, keepdims=True) + 1e-5), -8, 8)
        s = (h @ weight) @ h.T / math.sqrt(x.shape[1])
        p = np.exp(s - s.max(-1, keepdims=True))
        return (padded + (p / p.sum(-1, keepdims=True)) @ h)[: x.shape[0]]

    verdict = _verdicts(stream, _facts(stream, bucket), _outputs(stream, unmasked))["outputs"]
    assert not verdict["passed"] and "mask" in verdict["message"]
    assert not _verdicts(stream, _facts(stream, bucket), b"\0" * 16)["outputs"]["passed"]


def test_the_harness_compiles_with_dynamo_and_reports_its_counters():
    import pickle

    import torch

    stream = {"xs": [x for x in _stream()["xs"][:6]], "weight": _stream()["weight"]}
    # What the worker does before it loads the learner's module.
    compiled.capture()
    block = _solution("compile_stream")["attention_block"]
    module = types.SimpleNamespace(attention_block=block, bucket_length=lambda n: 64 if n <= 64 else 512)
    header, data = compiled.run_stream(module, "attention_block", {"bucket": "bucket_length"}, pickle.dumps(stream), "cpu", lambda exc: {"type": type(exc).__name__, "message": str(exc)})
    assert "stream" in header, header
    facts = header["stream"]
    assert facts["graph_breaks"] == 0 and facts["unique_graphs"] == len(set(facts["padded"]))
    assert _verdicts(stream, facts, data)["outputs"]["passed"]

    def with_item(x, mask, weight):
        if x.abs().max().item() > 100:
            x = x.clamp(-100, 100)
        return block(x, mask, weight)

    module.attention_block = with_item
    header, _ = compiled.run_stream(module, "attention_block", {"bucket": "bucket_length"}, pickle.dumps(stream), "cpu", lambda exc: {"type": type(exc).__name__, "message": str(exc)})
    assert "compile_error" in header and "item" in header["compile_error"]["message"].lower()
    module.bucket_length = lambda n: n - 1
    header, _ = compiled.run_stream(module, "attention_block", {"bucket": "bucket_length"}, pickle.dumps(stream), "cpu", str)
    assert "bad_bucket" in header
    assert torch.compile is compiled._HARNESS["compile"]


def test_the_solution_notebook_is_graded_in_full_on_a_cpu():
    from autograder import notebooks

    results = {r["problem"]: r for r in notebooks.grade_notebook(ROOT / "solutions" / "act3-profiling" / "compile_stream.ipynb", "cpu", speed=False)}
    assert results["act3.compile_stream"]["status"] == "PASS", results
    assert results["act3.compile_stream"]["points"] == COMPILE.max_points


# --- 3.4: a CUDA graph for a launch-bound loop (the judge's logic, run on a CPU step) ---------------


def _graph_grading(make_graphed, moves_off: bool = False) -> dict:
    """graphs.grade with the worker's harness called in this process, on the CPU: every check but
    the capture itself, which needs a GPU (the GPU run grades the solution notebook and the
    adversarial submissions on one)."""
    from autograder import graphs, judge_grading

    problem = dataclasses.replace(registry.get("act3.cuda_graph"), timed_calls=20)
    harness = graphs.Harness(problem)
    module = types.SimpleNamespace(make_graphed=make_graphed)

    def ask(request, payload=b"", timeout=None):
        assert request["op"] == "harness"
        if moves_off and request["action"] == "run":
            _move_off(worker)
        return harness(module, "make_graphed", request, payload, "cpu", lambda exc: {"type": type(exc).__name__, "message": str(exc)})

    # A stand-in for the worker's process, which the judge pins to its own CPU while it times.
    worker = _stand_in_worker()
    pinned = {}

    def end():
        pinned["worker"] = os.sched_getaffinity(worker.pid)
        pinned["judge"] = os.sched_getaffinity(0)

    grading_ = types.SimpleNamespace(
        device="cpu", problem=problem, stopped=False, result=ProblemResult(problem=problem.name),
        learner=types.SimpleNamespace(ask=ask, end=end, process=worker), remaining=lambda: 60.0, stage=lambda name: None,
    )
    grading_.fail_hard = lambda status, message, traceback=None: judge_grading.Grading.fail_hard(grading_, status, message, traceback)
    grading_.pass_if_all = lambda good, bad: judge_grading.Grading.pass_if_all(grading_, good, bad)
    try:
        graphs.grade(grading_)
    finally:
        worker.kill()
        worker.wait()
    return {**grading_.result.to_dict(), "pinned": pinned}


def test_a_wrapper_that_computes_the_step_passes_and_is_timed_against_eager():
    before = os.sched_getaffinity(0)
    result = _graph_grading(lambda step, example: step)
    assert result["status"] == "PASS", result
    assert len(result["cases"]) == 2 and result["graph"]["ratio"] > 0
    assert "us per step replayed" in result["speed_note_text"]
    graph = result["graph"]
    # An eager window beside each replay window, three more once the worker is gone, the fastest compared.
    assert len(graph["replay_windows_us"]) == 3 and len(graph["eager_windows_us"]) == 6 and graph["eager_beside_worker"] == 3
    assert graph["eager_us"] == min(graph["eager_windows_us"])
    # Both loops ran on the judge's CPU, and the judge had its CPUs back after.
    assert result["pinned"] == {"worker": {graph["cpu"]}, "judge": {graph["cpu"]}}
    assert os.sched_getaffinity(0) == before


# Two threads, not dumpable (as a sealed judge's children may be); a line on its input moves every
# thread back onto all the CPUs it started with, as a submission calling os.sched_setaffinity would.
STAND_IN = """
import os, sys, threading, time
from autograder import osguard
osguard.hide_memory()
everywhere = os.sched_getaffinity(0)
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("up", flush=True)
for line in sys.stdin:
    for thread in os.listdir("/proc/self/task"):
        if line.strip() == "nice":
            nice = os.getpriority(os.PRIO_PROCESS, int(thread))
            # Under a CI runner already at nice 19 the one lower priority left is the idle policy.
            if nice <= 14:
                os.setpriority(os.PRIO_PROCESS, int(thread), nice + 5)
            else:
                os.sched_setscheduler(int(thread), os.SCHED_IDLE, os.sched_param(0))
        else:
            os.sched_setaffinity(int(thread), everywhere)
    print("moved", flush=True)
"""


def _stand_in_worker() -> subprocess.Popen:
    worker = subprocess.Popen([sys.executable, "-c", STAND_IN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert worker.stdout.readline().strip() == b"up"
    return worker


def _move_off(worker: subprocess.Popen, how: str = "move") -> None:
    worker.stdin.write(how.encode() + b"\n")
    worker.stdin.flush()
    assert worker.stdout.readline().strip() == b"moved"


def test_every_thread_of_the_worker_runs_on_the_judges_cpu_while_it_times():
    from autograder import pinning

    worker = _stand_in_worker()
    try:
        before = os.sched_getaffinity(0)
        with pinning.on_one_cpu(worker.pid) as cpu:
            threads = [int(t) for t in os.listdir(f"/proc/{worker.pid}/task")]
            assert len(threads) == 2 and all(os.sched_getaffinity(t) == {cpu} for t in threads)
            assert os.sched_getaffinity(0) == {cpu} and cpu in before
            assert pinning.threads_off(worker.pid, cpu) == []
            _move_off(worker)
            assert sorted(pinning.threads_off(worker.pid, cpu)) == sorted(threads)
        assert os.sched_getaffinity(0) == before
    finally:
        worker.kill()
        worker.wait()


def test_a_worker_that_lowers_or_raises_its_threads_priority_is_seen():
    from autograder import pinning

    worker = _stand_in_worker()
    try:
        with pinning.on_one_cpu(worker.pid) as cpu:
            assert pinning.threads_off(worker.pid, cpu) == []
            _move_off(worker, "nice")
            assert len(pinning.threads_off(worker.pid, cpu)) == 2
    finally:
        worker.kill()
        worker.wait()


def test_the_judge_sees_its_processes_rescheduled_and_puts_back_what_it_may():
    from autograder import pinning

    worker = _stand_in_worker()
    try:
        kept = pinning.scheduling([worker.pid])
        nice, policy = os.getpriority(os.PRIO_PROCESS, worker.pid), os.sched_getscheduler(worker.pid)
        assert pinning.changed(kept) == []
        _move_off(worker, "nice")
        said = pinning.changed(kept)
        nice_now, policy_now = os.getpriority(os.PRIO_PROCESS, worker.pid), os.sched_getscheduler(worker.pid)
        cpus = sorted(os.sched_getaffinity(worker.pid))
        assert (nice_now, policy_now) != (nice, policy)
        assert said == [f"process {worker.pid}: nice {nice} -> {nice_now}, policy {policy} -> {policy_now}, CPUs {cpus} -> {cpus}"], said
        everywhere = os.sched_getaffinity(worker.pid)
        os.sched_setaffinity(worker.pid, {min(everywhere)})
        assert any(f"CPUs {sorted(everywhere)} -> [{min(everywhere)}]" in line for line in pinning.changed(kept)) or len(everywhere) == 1
        pinning.restore(kept)
        # The CPUs always come back; a lowered priority only where raising it is allowed (root).
        assert os.sched_getaffinity(worker.pid) == everywhere
        now = (os.getpriority(os.PRIO_PROCESS, worker.pid), os.sched_getscheduler(worker.pid))
        assert (now == (nice, policy)) == (os.geteuid() == 0), now
    finally:
        worker.kill()
        worker.wait()


def test_a_grading_whose_processes_were_rescheduled_is_rejected():
    """What the judge does at a grading's end where the worker's filter could not refuse the change
    (not Linux on x86-64, or a thread started before the filter)."""
    from autograder import judge_grading, pinning

    worker = _stand_in_worker()
    try:
        kept = pinning.scheduling([worker.pid])
        grading_ = types.SimpleNamespace(stopped=False, result=ProblemResult(problem="act0.vector_add"))
        grading_.fail_hard = lambda status, message, traceback=None: judge_grading.Grading.fail_hard(grading_, status, message, traceback)
        judge_grading.Grading._scheduling_kept(grading_, kept)
        assert grading_.result.status is None or grading_.result.status != "REJECT"
        _move_off(worker, "nice")
        judge_grading.Grading._scheduling_kept(grading_, kept)
        assert grading_.result.status == "REJECT" and "changed how the grader's processes are scheduled" in grading_.result.message
    finally:
        worker.kill()
        worker.wait()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="on one CPU every process is already pinned to it")
def test_a_worker_that_cannot_be_pinned_leaves_both_loops_unpinned(monkeypatch):
    from autograder import pinning

    refused = pinning._pin
    monkeypatch.setattr(pinning, "_pin", lambda thread, cpus: thread == 0 and refused(thread, cpus))
    worker = _stand_in_worker()
    try:
        before = os.sched_getaffinity(0)
        with pinning.on_one_cpu(worker.pid) as cpu:
            # Not a worker that moved itself: nothing is pinned, and nothing is said to have moved.
            assert cpu is None and os.sched_getaffinity(0) == before
            assert pinning.threads_off(worker.pid, cpu) == []
    finally:
        worker.kill()
        worker.wait()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a worker can move off the grader's CPU only where there is another")
def test_replays_that_move_off_the_graders_cpu_fail():
    result = _graph_grading(lambda step, example: step, moves_off=True)
    assert result["status"] == "FAIL", result
    assert "moved its threads off the CPU core" in result["cases"][-1]["message"], result


def test_a_replay_that_keeps_outputs_by_input_gains_nothing():
    """Outputs kept by their input's address: with the same inputs in every timed window this read
    121x eager; every window now has inputs of its own."""
    def make_graphed(step, example):
        seen = {}

        def replay(x):
            if x.data_ptr() not in seen:
                seen[x.data_ptr()] = step(x)
            return seen[x.data_ptr()]

        return replay

    result = _graph_grading(make_graphed)
    assert result["status"] == "FAIL" or result["graph"]["ratio"] < 1.5, result.get("graph")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the judge can be moved off its CPU only where there is another")
def test_a_judge_moved_off_its_core_while_it_times_rejects_the_grading():
    """Here the harness runs in the judge's own thread, so a replay that moves its caller moves the
    judge, as a worker moving its parent would: on_one_cpu's exit would put it back unseen."""
    before = os.sched_getaffinity(0)

    def make_graphed(step, example):
        def replay(x):
            os.sched_setaffinity(0, before)
            return step(x)

        return replay

    result = _graph_grading(make_graphed)
    assert result["status"] == "REJECT" and "moved the grader's process off the CPU core" in result["message"], result
    assert os.sched_getaffinity(0) == before


def test_a_replay_of_the_captured_input_fails():
    def cached(step, example):
        out = step(example)
        return lambda x: out

    result = _graph_grading(cached)
    assert result["status"] == "FAIL" and "new input" in result["cases"][0]["message"]


def test_a_failed_capture_is_explained_and_a_non_function_refused():
    def illegal(step, example):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    result = _graph_grading(illegal)
    assert result["status"] == "FAIL" and "the capture failed" in result["message"] and "synchronised with the CPU" in result["message"]
    result = _graph_grading(lambda step, example: 3)
    assert result["status"] == "FAIL" and "must return a function" in result["message"]


def test_the_speed_points_follow_the_judges_ratio_on_a_gpu_only():
    from autograder import verdict

    problem = registry.get("act3.cuda_graph")
    assert problem.speed_fraction(1.0) == 0 and problem.speed_fraction(1.5) == 0.5 and problem.speed_fraction(3.0) == 1
    graded = verdict.score(problem, {"problem": problem.name, "status": "PASS", "speed_fraction": 0.5, "speed_note_text": "1.5x"}, "cuda")
    assert graded["points"] == 3.0 and graded["speed_note"] == "1.5x"
    assert verdict.score(problem, {"problem": problem.name, "status": "PASS", "speed_fraction": 1.0}, "cpu")["points"] == 2.0
    assert verdict.score(problem, {"problem": problem.name, "status": "FAIL", "speed_fraction": 1.0}, "cuda")["points"] == 0.0
    result = grading.grade_source(problem, "def make_graphed(step, example):\n    return step\n", "make_graphed", device="cpu")
    assert result["status"] == "NEEDS GPU" and result["points"] == 0


def test_kernel_times_of_a_mostly_idle_step_are_allowed_twice_the_spread():
    idle = {"all_kernels": {"gemv": 61.2, "add": 20.0, "copy": 5.0}, "idle_share": 0.9, "regime": "overhead", "matmul_share": 0.7}
    answer = {"top_kernels": [["gemv", 91.9], ["add", 21.0], ["copy", 5.0]], "idle_share": 0.88, "regime": "overhead"}
    assert profiling.judge_profile(answer, None, 0.0, 0.0, idle)[0]
    busy = {**idle, "idle_share": 0.08, "regime": "compute"}
    passed, message = profiling.judge_profile({**answer, "idle_share": 0.1, "regime": "compute"}, None, 0.0, 0.0, busy)
    assert not passed and "within 1.5x" in message, message
    answer["top_kernels"][0][1] = 130.0
    passed, message = profiling.judge_profile(answer, None, 0.0, 0.0, idle)
    assert not passed and "within 2.0x" in message, message
