"""Exercise 1.5, predict the traffic (act1.predict_traffic): the counters its judge reads are the
committed H100 run's, the counting rules meet them, the notebook's table quotes them, the learner's
process never gets them, and every known-wrong submission fails for its own reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autograder import grading, learner_code, registry
from autograder.problems.act1.predict_traffic import reference as traffic
from tests.adversarial.cases import _parse

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = registry.get("act1.predict_traffic")
FOLDER = Path(traffic.__file__).parent
SUBMISSIONS = sorted((FOLDER / "submissions").glob("*.py"))


def test_the_judges_counters_are_the_committed_runs():
    run = json.loads((ROOT / traffic.PROFILED["source"]).read_text())
    sizes = json.loads((ROOT / traffic.PROFILED["source"]).with_name("run.json").read_text())["sizes"]
    assert set(traffic.PROFILED["kernels"]) == {f"strided_read_{s}" for s in sizes["strided_read"]["strides"]} | {"transpose_naive", "transpose"}
    for kernel, profiled in traffic.PROFILED["kernels"].items():
        for metric, value in profiled["counters"].items():
            assert run[kernel][metric]["value"] == value, (kernel, metric)
        access = profiled["access"]
        if access["pattern"] == "strided_read":
            assert (access["n"], access["stride"]) == (sizes["strided_read"]["n"], int(kernel.rsplit("_", 1)[1]))
        else:
            assert [access["rows"], access["cols"]] == sizes["transpose"]


@pytest.mark.parametrize("kernel", sorted(traffic.PROFILED["kernels"]))
def test_the_rules_meet_every_graded_counter_and_miss_the_one_left_out(kernel):
    profiled = traffic.PROFILED["kernels"][kernel]
    predicted = traffic.reference(profiled["access"])
    assert traffic.judge(predicted, predicted, {"access": profiled["access"]}) is None
    for key, (_, read) in traffic.COUNTERS.items():
        measured = read(profiled["counters"])
        if key in traffic.NOT_PREDICTABLE.get(kernel, ()):
            assert measured > 1.2 * predicted[key], (kernel, key)  # why it is left out
        elif key == "dram_read_bytes":
            assert 0 <= measured - predicted[key] <= 32 * 1024, (kernel, measured)  # the few KB the rules leave out
        else:
            assert measured == predicted[key], (kernel, key)


def test_hand_checked_rules():
    def strided(n, stride):
        return traffic.reference({"pattern": "strided_read", "n": n, "stride": stride})

    assert strided(32, 1) == {"sectors_per_request": 4, "l2_read_bytes": 128, "l2_write_sectors": 4, "dram_read_bytes": 128}
    # 12 bytes apart: a warp's 32 floats span 372 bytes, sectors 0 to 11, pairs 0 to 5.
    assert strided(32, 3) == {"sectors_per_request": 12, "l2_read_bytes": 384, "l2_write_sectors": 4, "dram_read_bytes": 384}
    # 48 bytes apart: a sector per float at L2, but four floats share three 64-byte pairs.
    assert strided(64, 12) == {"sectors_per_request": 32, "l2_read_bytes": 2048, "l2_write_sectors": 8, "dram_read_bytes": 3072}
    # The closed form of the notebook's solution: a float costs min(4 s, 32) bytes at L2, min(4 s, 64) at DRAM.
    for stride in range(1, 130):
        assert strided(320, stride) == {"sectors_per_request": min(4 * stride, 32), "l2_read_bytes": 320 * min(4 * stride, 32), "l2_write_sectors": 40, "dram_read_bytes": 320 * min(4 * stride, 64)}
    naive = traffic.reference({"pattern": "transpose_naive", "rows": 32, "cols": 64})
    tiled = traffic.reference({"pattern": "transpose_tiled", "rows": 32, "cols": 64})
    assert naive["l2_write_sectors"] == 2048 and tiled["l2_write_sectors"] == 256
    assert naive["l2_read_bytes"] == tiled["l2_read_bytes"] == tiled["dram_read_bytes"] == 8192


def test_the_learner_gets_sizes_only_and_cannot_read_the_counters():
    for case in PROBLEM.make_cases(7):
        assert set(case) == {"access"} and set(case["access"]) <= {"pattern", "n", "stride", "rows", "cols"}
    counters = (FOLDER / "ncu_h100.json").resolve()
    assert any(counters.is_relative_to(Path(hidden).resolve()) for hidden in learner_code.hidden_files())


def test_the_notebooks_table_quotes_the_counters():
    """The "Try it" table, in MB and millions of sectors, rounded as printed, is the run's."""
    cells = json.loads((ROOT / "solutions" / f"{PROBLEM.notebook}.ipynb").read_text())["cells"]
    text = "".join(next(c for c in cells if c["id"] == "predict_traffic_try_intro")["source"])
    rows = re.findall(r"^\| (strided read, stride (\d+)|(naive|tiled) transpose 8192 x 8192) \|(.*)\|$", text, re.M)
    assert len(rows) == 8
    for _, stride, kind, values in rows:
        kernel = f"strided_read_{stride}" if stride else {"naive": "transpose_naive", "tiled": "transpose"}[kind]
        counters = traffic.PROFILED["kernels"][kernel]["counters"]
        measured = [read(counters) for _, read in traffic.COUNTERS.values()]
        expected = [f"{measured[0]:g}", f"{measured[1] / 1e6:.1f}", f"{measured[2] / 1e6:.2f}", f"{measured[3] / 1e6:.1f}"]
        assert [v.strip() for v in values.split("|")] == expected, kernel


def test_the_solution_notebook_earns_full_marks():
    cells = json.loads((ROOT / "solutions" / f"{PROBLEM.notebook}.ipynb").read_text())["cells"]
    source = "".join(next(c for c in cells if c["metadata"]["nbgrader"].get("solution"))["source"])
    result = grading.grade_source(PROBLEM, source, "predict_traffic", device="cpu")
    assert result["status"] == "PASS" and result["points"] == PROBLEM.max_points == 3


@pytest.mark.parametrize("path", SUBMISSIONS, ids=lambda p: p.stem)
def test_each_submission_gets_its_verdict_and_a_miss_names_the_counter(path):
    case = _parse(path)
    result = grading.grade_source(PROBLEM, path.read_text(), case.entry, device="cpu")
    assert result["status"] in case.expect, result
    missed = [c["message"] for c in result["cases"] if not c["passed"] and "Nsight Compute measured" in c["message"]]
    for message in missed:
        # The counter, the predicted value and the measured one, and by how much they differ.
        assert re.search(r"is [\d,.]+, but Nsight Compute measured [\d,.]+ on the H100 \(\w+__\S+.* of \w+\): [\d.]+% off", message), message
    if path.stem in ("dram_in_sectors", "dram_in_lines", "sectors_uncapped", "naive_writes_coalesced"):
        assert missed, f"{path.stem} must fail against the H100's counters"
    if path.stem == "book_megabytes":
        assert not missed and result["status"] == "FAIL", "within 2% of every counter, wrong by the rules only"
