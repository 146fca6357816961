"""The GPU run's shards of the adversarial suite (``--shard I/N``, tests/conftest.py): together they
hold every selected case once, and each holds its share of every act."""

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
