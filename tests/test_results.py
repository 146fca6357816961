"""results/ explains itself: every GPU run in a dated folder of results/runs/ that names its device,
results/README.md naming every folder, the benchmark writer naming its folder the way the book
finds it, and the run the book shows holding every file the pages take from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder import benchmark, cli, results

REPO_ROOT = Path(__file__).resolve().parent.parent
# A page's path into the latest benchmark run, such as {{ latest_benchmark }}/act0.md.
PATH_IN_LATEST_BENCHMARK = re.compile(re.escape(results.LATEST_BENCHMARK) + r"/([^\s`]+)")


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


def test_every_run_is_dated_and_names_its_device():
    runs = sorted(results.RUNS_DIR.iterdir())
    assert runs, "results/runs/ holds no run"
    for run in runs:
        assert run.is_dir() and re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9]+(-[a-z0-9]+)+", run.name), f"{run.name} is not <date>-<GPU>-<what>"
        assert (run / "README.md").is_file() or (run / "device.json").is_file(), f"{run.name} has neither a README.md nor a device.json"


def test_the_results_readme_names_every_file_and_run():
    readme = (results.RESULTS_DIR / "README.md").read_text(encoding="utf-8")
    entries = [path for path in results.RESULTS_DIR.iterdir() if path.name != "README.md"] + list(results.RUNS_DIR.iterdir())
    unnamed = [path.name for path in entries if f"`{path.name}" not in readme]
    assert not unnamed, f"results/README.md does not say what these are: {unnamed}"


def test_the_latest_benchmark_holds_every_file_the_book_takes_from_it():
    latest = results.latest_run()
    wanted = {name for page in (REPO_ROOT / "book").rglob("*.md") for name in PATH_IN_LATEST_BENCHMARK.findall(page.read_text(encoding="utf-8"))}
    assert {"act0.md", "act1.md", "act4.md"} <= wanted, f"the pages no longer take the act tables from the latest run: {sorted(wanted)}"
    missing = sorted(name for name in wanted if not (latest / name).is_file())
    assert not missing, f"{latest.name} lacks files the book shows: {missing}"


def test_the_grader_digest_follows_the_graders_files_only(tmp_path):
    for folder in results.GRADER_FOLDERS:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    first = results.grader_digest(tmp_path)
    (tmp_path / "autograder" / "__pycache__").mkdir()
    (tmp_path / "autograder" / "__pycache__" / "a.cpython-312.pyc").write_bytes(b"compiled")
    (tmp_path / "book.md").write_text("prose")
    assert results.grader_digest(tmp_path) == first
    (tmp_path / "tests" / "adversarial" / "a.py").write_text("x = 2\n")
    assert results.grader_digest(tmp_path) != first
    (tmp_path / "tests" / "adversarial" / "a.py").write_text("x = 1\n")
    (tmp_path / "autograder" / "a.py").rename(tmp_path / "autograder" / "b.py")
    assert results.grader_digest(tmp_path) != first
