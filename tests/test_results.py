"""Run folders are named <date>-<GPU>-<what>, the book shows the newest benchmark run, and the
benchmark writer names its folder the way the book finds it."""

from __future__ import annotations

import re

import pytest

from autograder import benchmark, cli, results


def test_a_run_is_named_by_date_gpu_and_what_ran():
    assert results.run_name("benchmark", "NVIDIA H200", "2026-11-23") == "2026-11-23-h200-benchmark"
    assert results.run_name("adversarial", "NVIDIA H100 80GB HBM3", "2026-11-25") == "2026-11-25-h100-80gb-hbm3-adversarial"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-tesla-t4-book", results.run_name("book", "Tesla T4"))


def test_the_latest_run_is_the_newest_folder_of_its_kind(tmp_path):
    for name in ("2026-11-23-h200-benchmark", "2026-12-01-h100-benchmark", "2026-11-30-h200-benchmark", "2026-12-05-h200-adversarial"):
        (tmp_path / name).mkdir()
    (tmp_path / "2026-12-09-h200-benchmark").write_text("a file is not a run")
    assert results.latest_run("benchmark", tmp_path).name == "2026-12-01-h100-benchmark"
    assert results.latest_run("adversarial", tmp_path).name == "2026-12-05-h200-adversarial"
    with pytest.raises(FileNotFoundError):
        results.latest_run("stability", tmp_path)


def test_bench_writes_a_run_that_becomes_the_latest(monkeypatch, tmp_path):
    written = []

    def record_out(solutions, out, recorded):
        written.append(out)
        return 0

    monkeypatch.setattr(benchmark, "run", record_out)
    monkeypatch.setattr(results, "this_gpu", lambda: "NVIDIA H200")
    assert cli.main(["bench"]) == 0
    [out] = written
    assert out.parent == results.RUNS_DIR
    older = tmp_path / "2000-01-01-h200-benchmark"
    older.mkdir()
    (tmp_path / out.name).mkdir()
    assert results.latest_run(results.BENCHMARK, tmp_path).name == out.name
