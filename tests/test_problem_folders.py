"""Problems kept one per folder: every folder loads into the registry, is shipped in the package,
and a spec that does not say what the grader needs fails with the file and the key named."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from autograder import metrics, registry
from autograder.problems import folders

ROOT = Path(__file__).resolve().parent.parent


def test_every_folder_is_a_registered_problem_and_a_package_of_the_wheel():
    listed = set(folders.tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = folders.spec_folders()
    assert {f.relative_to(folders.PROBLEMS_ROOT).as_posix() for f in found} >= {"act0/vector_add", "act0/saxpy"}
    for folder in found:
        problem = folders.load(folder)
        assert registry.get(problem.name).title == problem.title
        package = folders._module_name(folder)
        assert package in listed and package.rsplit(".", 1)[0] in listed, f"add {package} to [tool.setuptools] packages in pyproject.toml"


def test_the_wheel_leaves_the_submissions_beside_the_problems_out():
    """A problem's submissions/ (known-wrong and cheating learner files, tests/adversarial/cases.py) is
    test data: no package of the wheel and matched by no package-data pattern."""
    setuptools = folders.tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    submissions = sorted(folders.PROBLEMS_ROOT.rglob("submissions/*.py"))
    assert submissions, "no problem keeps its submissions beside it any more: update this test"
    for path in submissions:
        relative = path.relative_to(ROOT)
        assert ".".join(relative.parent.parts) not in setuptools["packages"], f"{relative.parent} must not be a package"
        for package, patterns in setuptools["package-data"].items():
            folder = ROOT.joinpath(*package.split("."))
            if folder in path.parents:
                inside = path.relative_to(folder).as_posix()
                assert not any(fnmatch.fnmatch(inside, pattern) for pattern in patterns), f"package-data of {package} ships {relative}"


def test_a_spec_becomes_the_problem_it_describes():
    add = registry.get("act0.vector_add")
    assert add.language == "triton" and add.function == "vector_add" and add.notebook == "act0-start/vector_add"
    assert add.bench_sizes == (1 << 25, 1 << 27) and add.test_sizes[0] == 1 and add.cpu_test_sizes[-1] == 65_537
    assert add.speed_scale.metric is metrics.COPY_FRACTION and (add.speed_scale.zero_at, add.speed_scale.full_at) == (0.30, 0.75)
    assert add.solution_target == 0.90 and add.max_points == 4.0
    assert add.bytes_moved(1000) == 12_000.0 and add.flops(1000) == 1000.0


def _folder(tmp_path: Path, spec: str, reference: str = "") -> Path:
    folder = tmp_path / "actx" / "demo"
    folder.mkdir(parents=True)
    (folder / "spec.toml").write_text(spec)
    (folder / "reference.py").write_text(reference)
    return folder


GOOD_SPEC = """
name = "actx.demo"
title = "Demo"
notebook = "actx/demo"
function = "demo"
language = "triton"
library_name = "torch.neg"
[sizes]
test = [1, [2, 3]]
bench = [[4096, 4096]]
[speed]
metric = "copy_fraction"
zero_at = 0.3
full_at = 0.7
"""


def test_a_spec_with_an_unknown_key_is_refused_with_its_file(tmp_path):
    folder = _folder(tmp_path, GOOD_SPEC.replace("[speed]", "[speed]\ntarget = 0.9"))
    with pytest.raises(folders.SpecError, match=r"spec.toml: \[speed\] has no key target"):
        folders.load(folder)
    folder = _folder(tmp_path / "b", "page = 'x'\n" + GOOD_SPEC)
    with pytest.raises(folders.SpecError, match="unknown key 'page'"):
        folders.load(folder)


def test_a_reference_without_its_functions_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(folders, "PROBLEMS_ROOT", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = _folder(tmp_path, GOOD_SPEC, "def make_inputs(size, seed, device):\n    return {}\n")
    monkeypatch.setattr(folders, "_module_name", lambda f: "actx.demo")
    with pytest.raises(folders.SpecError, match="must define reference, library, bytes_moved, flops"):
        folders.load(folder)


GRADED_CALL = re.compile(r'autograder\.(grade|grade_correctness|grade_speed)\(\s*"([^"]+)"')


@pytest.mark.parametrize("problem", registry.all_problems(), ids=lambda p: p.name)
def test_the_points_nbgrader_records_are_the_specs(problem):
    notebook = json.loads((ROOT / "solutions" / f"{problem.notebook}.ipynb").read_text())
    worth = {"grade": problem.max_points, "grade_correctness": problem.correctness_points, "grade_speed": problem.speed_points}
    graded = []
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        for part, name in GRADED_CALL.findall("".join(cell["source"])):
            if name == problem.name:
                assert meta.get("grade"), f"{problem.notebook}: the cell grading {name} is not an nbgrader graded cell"
                assert meta["points"] == worth[part], f"{problem.notebook}: {part} of {name} is worth {worth[part]} in its spec, {meta['points']} in the notebook"
                graded.append(part)
    assert sum(worth[p] for p in graded) == problem.max_points, f"{problem.notebook} does not grade all of {problem.name}"
