"""Exact and measured problems are folders too: a spec's ``kind`` picks the problem class, and a
spec or reference.py that does not fit its kind is refused with the file named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder import measured, python_problems, registry
from autograder.problems import folders

EXACT_SPEC = """
kind = "exact"
name = "actx.demo"
title = "Demo"
notebook = "actx/demo"
function = "demo"
rel_tol = 1e-6
[points]
correctness = 2
"""
EXACT_REFERENCE = "def make_cases(seed):\n    return [dict(n=seed)]\n\ndef reference(n):\n    return 2 * n\n"
MEASURED_SPEC = """
kind = "measured"
name = "actx.demo"
title = "Demo"
notebook = "actx/demo"
function = "demo"
arguments = ["op", "flops"]
"""
MEASURED_REFERENCE = "def make_ops(device):\n    return []\n\ndef judge(got, op, peak, bandwidth, seconds):\n    return True, ''\n"


@pytest.fixture
def make_folder(tmp_path, monkeypatch):
    """A problem folder importable as the package ``<act>.<name>``, the act's name new in each test
    (a package once imported stays in sys.modules)."""
    act = "kinds_" + re.sub(r"\W", "_", tmp_path.name)
    monkeypatch.setattr(folders, "PROBLEMS_ROOT", tmp_path)
    monkeypatch.setattr(folders, "_module_name", lambda folder: f"{act}.{folder.name}")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / act).mkdir()
    (tmp_path / act / "__init__.py").write_text("")

    def make(name: str, spec: str, reference: str) -> Path:
        folder = tmp_path / act / name
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        (folder / "spec.toml").write_text(spec)
        (folder / "reference.py").write_text(reference)
        return folder

    return make


def test_an_exact_spec_becomes_an_exact_problem(make_folder):
    loaded = folders.load(make_folder("exact_ok", EXACT_SPEC, EXACT_REFERENCE))
    assert isinstance(loaded, python_problems.ExactProblem) and loaded.kind == "exact"
    assert (loaded.name, loaded.function, loaded.correctness_points, loaded.rel_tol) == ("actx.demo", "demo", 2.0, 1e-6)
    assert loaded.reference(**loaded.make_cases(21)[0]) == 42


def test_a_measured_spec_becomes_a_measured_problem(make_folder):
    loaded = folders.load(make_folder("measured_ok", MEASURED_SPEC, MEASURED_REFERENCE))
    assert isinstance(loaded, measured.MeasuredProblem) and loaded.needs_gpu
    assert loaded.arguments == ("op", "flops") and loaded.correctness_points == 2.0


@pytest.mark.parametrize(
    ("name", "spec", "reference", "error"),
    [
        ("speed_key", EXACT_SPEC + "[speed]\nmetric = 'copy_fraction'\n", EXACT_REFERENCE, "of kind .exact. has no key speed"),
        ("speed_points", EXACT_SPEC + "speed = 1\n", EXACT_REFERENCE, "correctness points only"),
        ("no_cases", EXACT_SPEC, "def reference(n):\n    return n\n", "must define make_cases"),
        ("no_judge", MEASURED_SPEC, "def make_ops(device):\n    return []\n", "must define judge"),
        ("no_arguments", MEASURED_SPEC.replace('arguments = ["op", "flops"]\n', ""), MEASURED_REFERENCE, "arguments"),
        ("bad_kind", EXACT_SPEC.replace('"exact"', '"essay"'), EXACT_REFERENCE, "kind must be kernel, exact or measured"),
    ],
)
def test_a_spec_that_does_not_fit_its_kind_is_refused(make_folder, name, spec, reference, error):
    with pytest.raises(folders.SpecError, match=error):
        folders.load(make_folder(name, spec, reference))


def test_every_act_keeps_its_python_exercises_in_folders():
    kinds = {p.name: p.kind for p in registry.all_problems()}
    exact_folders = [f for f in folders.spec_folders() if 'kind = "exact"' in (f / folders.SPEC).read_text()]
    assert {folders.load(f).name for f in exact_folders} == {name for name, kind in kinds.items() if kind == "exact"}
    assert {"act1.peak_rates", "act2.matmul_cost", "act2.decode_tokens_per_s"} <= set(kinds)
    assert kinds["act2.measure_point"] == kinds["act2.classify_op"] == "measured"
