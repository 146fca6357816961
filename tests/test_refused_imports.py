"""The learner's code cannot import the grader's modules that compute expected answers, however it
asks, and every grader module the problem definitions use is either refused or named here as
computing no answer (a new module must be put on one side or the other)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import learner_code, osguard

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autograder"

# Grader modules the problem definitions use that hold no expected answer, with why.
COMPUTES_NO_ANSWER = {
    "autograder.answers": "the judge's stages for Python answers: they call a problem's reference, hold none",
    "autograder.compiled": "the harness that runs the learner's function under torch.compile and counts what it did",
    "autograder.ddp_model": "exercise 5.3's model, which the learner's code calls; the additions that make the expected gradients are the judge's alone",
    "autograder.distributed": "starts the ranks and compares what they return with the judge's answers",
    "autograder.exact": "compares answers with expected ones it is given",
    "autograder.megakernels": "Act 8's inputs, eager steps (the library) and traces, which its notebooks use; a kernel computing the answer with them runs PyTorch's operators, which the honesty check rejects",
    "autograder.graphs": "the harness around the grader's step that the learner's CUDA graph wraps",
    "autograder.memory_step": "the harness that measures a training step's peak memory",
    "autograder.metrics": "speed metrics as types",
    "autograder.problem": "the Problem type (its registry is emptied when the learner's code arrives)",
    "autograder.python_problems": "kinds of Python exercise",
    "autograder.registry": "looks problems up; finds nothing once the problem definitions are refused",
    "autograder.tiny_config": "the tiny transformer's shapes, which the learner's code builds on",
    "autograder.tiny_transformer": "the tiny transformer, which the learner's code builds on",
}


def _imported_by(path: Path) -> set[str]:
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
            found |= {f"{base}.{alias.name}" for alias in node.names} if base == "autograder" else {base}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("autograder.")}


def test_every_module_the_problems_use_is_refused_or_computes_no_answer():
    used = set()
    for path in (PACKAGE / "problems").rglob("*.py"):
        if "submissions" not in path.parts:
            used |= _imported_by(path)
    unclassified = sorted(n for n in used if not learner_code.refused_as(n) and n not in COMPUTES_NO_ANSWER)
    assert not unclassified, (
        f"the problem definitions use {unclassified}: add each to autograder.learner_code.REFUSED_MODULES if it computes "
        "an expected answer, or to COMPUTES_NO_ANSWER here with why it does not"
    )
    assert all((PACKAGE / (name.split(".", 1)[1].replace(".", "/") + ".py")).exists() for name in COMPUTES_NO_ANSWER)


PROBE = """
import json
import autograder
from autograder import registry
registry.all_problems()
from autograder import learner_code, osguard
learner_code.refuse_grader_imports()
results = {}
for statement in STATEMENTS:
    try:
        exec(statement, {})
        results[statement] = "imported"
    except (learner_code.GraderImportRefused, KeyError):
        results[statement] = "refused"
print(json.dumps(results))
"""


def test_refused_modules_stay_refused_after_the_worker_loaded_them():
    statements = [f"import {name}" for name in learner_code.REFUSED_MODULES]
    statements += [f"from autograder import {name.split('.', 1)[1]}" for name in learner_code.REFUSED_MODULES]
    statements += [
        "import autograder.problems.act0",
        "from autograder.registry import get; get('act3.summarize_trace')",
        "from autograder.problem import _REGISTRY; _REGISTRY['act3.summarize_trace']",
    ]
    allowed = ["from autograder import tiny_transformer", "import autograder", "from autograder.launch import run_ranks"]
    code = f"STATEMENTS = {statements + allowed!r}\n" + PROBE
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert [s for s in statements if results[s] != "refused"] == []
    assert [s for s in allowed if results[s] != "imported"] == []


def test_a_grading_without_the_file_sandbox_says_so():
    from autograder import report

    bare = {"problem": "act6.block_manager", "status": "PASS", "device": "cpu", "sandbox": "no filesystem sandbox (this kernel has no Landlock)"}
    assert "the grader's files were not kept from your code here" in report.text(bare)
    confined = dict(bare, sandbox="Landlock ABI 7: writes only beneath the grading's own folders, 15 of the grader's paths unreadable; every capability dropped")
    assert "not kept from your code" not in report.text(confined)
    assert "root's capabilities" in report.text(dict(confined, sandbox="Landlock ABI 7: ...; capabilities still held: CapBnd"))
    kept = "the ranks keep the host's network (no namespace of their own: [Errno 1] Operation not permitted)"
    assert f"note: {kept}" in report.text(dict(confined, network=kept))
    assert "note: the ranks" not in report.text(dict(confined, network="the ranks in a network of their own (its loopback device only)"))


def test_the_learners_process_holds_no_capability_whatever_user_grades():
    """Root (Colab's user) holds every capability; the worker gives all of them up before the
    learner's code loads, from the bounding set too. CAP_SYS_ADMIN is what the NVIDIA driver asks of
    a caller that locks the GPU's clocks or lowers its power limit, CAP_MKNOD what a device node
    takes: both are tried here, the node for real, the driver's test by reading the sets."""
    script = (
        "import json, os, stat, subprocess, sys\n"
        "from autograder import osguard\n"
        "said = osguard.drop_capabilities()\n"
        "try:\n"
        "    os.mknod(sys.argv[1], stat.S_IFCHR | 0o600, os.makedev(1, 3))\n"
        "    node = 'made'\n"
        "except PermissionError:\n"
        "    node = 'refused'\n"
        "child = subprocess.run(['cat', '/proc/self/status'], capture_output=True, text=True).stdout\n"
        "masks = {line.split(':')[0]: int(line.split()[1], 16) for line in child.splitlines() if line.startswith('Cap')}\n"
        "print(json.dumps([said, node, masks]))\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        out = subprocess.run([sys.executable, "-c", script, os.path.join(folder, "mem")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    said, node, child = json.loads(out.stdout)
    mine = osguard.capabilities("self")
    held = any(mine.get(name) for name in osguard.HELD)
    assert said == ("every capability dropped" if held else "no capabilities held"), out.stdout
    # Not even a program it starts holds one; where it held them (root), not even in its bounding set.
    assert node == "refused" and not any(child[name] for name in osguard.HELD), out.stdout
    assert child["CapBnd"] == 0 or not held, out.stdout


def test_the_paths_kept_from_the_learner_exist_and_everything_around_them_stays_readable():
    from autograder import osguard

    hidden = learner_code.hidden_files()
    assert str(PACKAGE / "problems") in hidden and str(ROOT / "solutions") in hidden
    readable = osguard.readable_around(hidden)
    assert not [path for path in readable if any(path == h or path.startswith(h + "/") for h in hidden)]
    assert str(PACKAGE / "checking.py") in readable and str(ROOT / "exercises") in readable and "/usr" in readable


def test_jupyters_tokens_and_kernel_keys_are_kept_from_the_learner(tmp_path):
    """Act 5's ranks keep the network, where a Jupyter server opens a terminal for whoever holds its
    token and a kernel runs code for whoever holds its connection key: neither file can be read from
    the learner's process; what is beside them can."""
    runtime, beside, writable = tmp_path / "jupyter" / "runtime", tmp_path / "jupyter" / "beside.txt", tmp_path / "grading"
    runtime.mkdir(parents=True)
    writable.mkdir()
    (runtime / "jpserver-1.json").write_text('{"token": "secret"}')
    (runtime / "kernel-2.json").write_text('{"key": "secret"}')
    beside.write_text("readable")
    script = (
        "import json, sys\n"
        "from autograder import learner_code, osguard\n"
        "found = {'sandbox': osguard.confine([sys.argv[1]], hidden=learner_code.hidden_files())}\n"
        "for path in sys.argv[2:]:\n"
        "    try:\n"
        "        found[path] = open(path).read()\n"
        "    except PermissionError:\n"
        "        found[path] = 'refused'\n"
        "print(json.dumps(found))\n"
    )
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    out = subprocess.run([sys.executable, "-c", script, str(writable), str(runtime / "jpserver-1.json"), str(runtime / "kernel-2.json"), str(beside)], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout)
    assert found.pop("sandbox").startswith("Landlock"), "this test needs a kernel with Landlock"
    assert found == {str(runtime / "jpserver-1.json"): "refused", str(runtime / "kernel-2.json"): "refused", str(beside): "readable"}
