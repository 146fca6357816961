"""The GPU run's shards of the adversarial suite (``--shard I/N`` and ``--cases FILE``, tests/conftest.py): together they
hold every selected case once, and each holds its share of every act."""

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, shard_of


def _collected(*arguments: str) -> list[str]:
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "gpu", "-k", "test_verdict_on_gpu", *arguments, "tests/adversarial"]
    listed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in listed.splitlines() if "::" in line]


def test_shards_hold_every_selected_case_once_and_every_act_in_each():
    everything = _collected()
    shards = [_collected("--shard", f"{index}/3") for index in range(3)]
    assert sorted(sum(shards, [])) == sorted(everything)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    for shard in shards:
        assert {"[act1.", "[act3.", "[act4."} <= {case[case.index("[") : case.index("[") + 6] for case in shard}


def test_a_shard_is_an_index_below_a_count():
    assert shard_of("2/8") == (2, 8)
    for wrong in ("8/8", "-1/8", "2", "a/b"):
        with pytest.raises(pytest.UsageError):
            shard_of(wrong)


def test_a_case_list_keeps_its_cases_in_its_order(tmp_path):
    everything = _collected()
    names = [line[line.index("[") + 1 : -1] for line in everything]
    chosen = [names[5], names[0], names[-1]]
    listed = tmp_path / "pending.txt"
    listed.write_text("\n".join(chosen) + "\n")
    assert [line[line.index("[") + 1 : -1] for line in _collected("--cases", str(listed))] == chosen


def test_a_case_list_naming_no_case_is_refused(tmp_path):
    listed = tmp_path / "pending.txt"
    listed.write_text("constant\nno_such_case\n")
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "gpu", "--cases", str(listed), "tests/adversarial"]
    refused = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 4 and "no_such_case" in refused.stderr


def test_pending_verdicts_counts_one_graders_archives_and_lists_the_rest_slowest_first(tmp_path):
    from tests.adversarial.cases import cases

    names = [case.name for case in cases("cuda", alone=False)]
    graded, wrong, other_grader = names[0], names[1], names[2]
    for folder, digest, verdicts in (("a", "d1", {graded: ("FAIL", "FAIL: wrong"), wrong: ("REJECT", "PASS: 10/10")}),
                                     ("b", "d2", {other_grader: ("FAIL", 'FAIL: x\n{"seconds": 999.0}')})):
        run = tmp_path / folder / "results" / "runs" / "x"
        run.mkdir(parents=True)
        (run / "device.json").write_text(json.dumps({"grader": digest}))
        (tmp_path / folder / "verdicts").mkdir()
        for name, (expected, got) in verdicts.items():
            (tmp_path / folder / "verdicts" / (name.replace("/", "--") + ".txt")).write_text(f"expected {expected}\n{got}\n")
    out = tmp_path / "pending.txt"
    command = [sys.executable, "tests/gpu/pending_verdicts.py", "--digest", "d1", "--runs", str(tmp_path), "--out", str(out)]
    report = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert f"2 of {len(names)} cases graded, 1 right" in report and f"WRONG {wrong}: PASS" in report
    pending = out.read_text().split()
    assert sorted(pending) == sorted(set(names) - {graded, wrong}) and pending[0] == other_grader
