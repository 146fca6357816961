"""The stability record: repeated gradings merge across GPU calls, and a grading short of full
marks counts as a false rejection (the CLI then fails)."""

from __future__ import annotations

import json

import pytest

from autograder import cli, stability


def _row(run, metric, ratios, status="PASS", points=4.0):
    return {"run": run, "status": status, "points": points, "max_points": 4.0, "metric": metric, "ratios": ratios}


def _write(path, name, rows):
    path.write_text(json.dumps(stability.record({name: rows})))
    return path


def test_summary_counts_short_gradings_as_false_rejections():
    rows = [_row(0, 0.9, [1.0]), _row(1, 0.9, [1.0], points=3.5), _row(2, 0.9, [1.0], status="FAIL", points=0.0)]
    summary = stability.summarise({"act0.vector_add": rows})["act0.vector_add"]
    assert summary["false_rejections"] == 2
    assert summary["verdicts"] == ["FAIL", "PASS"]


def test_spread_is_the_coefficient_of_variation_per_size():
    rows = [_row(0, 0.9, [1.0, 2.0]), _row(1, 1.1, [1.0, 4.0])]
    summary = stability.summarise({"act4.softmax": rows})["act4.softmax"]
    assert summary["metric_cv"] == pytest.approx(0.1)
    assert summary["ratio_cv_per_size"] == pytest.approx([0.0, 1.0 / 3.0])
    assert summary["ratio_range_per_size"] == [[1.0, 1.0], [2.0, 4.0]]


def test_one_grading_has_no_spread():
    summary = stability.summarise({"act4.softmax": [_row(0, 0.9, [2.0])]})["act4.softmax"]
    assert summary["metric_cv"] is None and summary["ratio_cv_per_size"] is None


def test_records_from_several_calls_merge_in_order(tmp_path):
    first = _write(tmp_path / "a.json", "act4.softmax", [_row(0, 0.90, [2.0]), _row(1, 0.92, [2.1])])
    second = _write(tmp_path / "b.json", "act4.softmax", [_row(0, 0.94, [2.2])])
    other = _write(tmp_path / "c.json", "act1.reduction", [_row(0, 0.99, [1.01])])
    record = stability.merge([first, second, other])
    assert list(record["runs"]) == ["act1.reduction", "act4.softmax"]
    assert [r["run"] for r in record["runs"]["act4.softmax"]] == [0, 1, 2]
    assert [r["metric"] for r in record["runs"]["act4.softmax"]] == [0.90, 0.92, 0.94]
    assert record["summary"]["act4.softmax"]["runs"] == 3
    assert [s.split("/")[-1] for s in record["sources"]["act4.softmax"]] == ["a.json", "b.json"]


def test_table_names_the_metric_of_each_problem(tmp_path):
    records = [
        _write(tmp_path / "a.json", "act1.reduction", [_row(0, 0.985, [1.01]), _row(1, 0.991, [1.02])]),
        _write(tmp_path / "b.json", "act4.sgemm_naive", [_row(0, 0.0101, [0.0101]), _row(1, 0.0099, [0.0099])]),
    ]
    table = stability.markdown(stability.merge(records), "Heading.")
    reduction, naive = (line for line in table.splitlines() if line.startswith("| `"))
    assert "98.8% of copy bandwidth" in reduction and "1.010-1.020x" in reduction
    assert "0.0100x the library" in naive and "0.0099-0.0101x" in naive


def test_cli_writes_both_files_and_fails_on_a_false_rejection(tmp_path, capsys):
    honest = _write(tmp_path / "a.json", "act1.transpose", [_row(0, 0.92, [3.3]), _row(1, 0.93, [3.4])])
    out = tmp_path / "results" / "stability"
    assert cli.main(["stability", str(honest), "--out", str(out)]) == 0
    assert json.loads(out.with_suffix(".json").read_text())["summary"]["act1.transpose"]["runs"] == 2
    assert "`act1.transpose`" in out.with_suffix(".md").read_text()
    flaky = _write(tmp_path / "b.json", "act1.transpose", [_row(0, 0.92, [3.3], status="FAIL", points=0.0)])
    assert cli.main(["stability", str(honest), str(flaky), "--out", str(out)]) == 1
    assert "`act1.transpose`" in capsys.readouterr().out
