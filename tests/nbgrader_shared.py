"""The nbgrader course shared by tests/test_nbgrader.py and tests/test_nbgrader_fresh.py (the
``nbgrader_course`` fixture in tests/conftest.py): solutions/ copied in, every act generated once,
and one `nbgrader autograde` of Act 0 for every submission those tests judge, so each notebook is
executed once and read by several tests:

- ``solution``: the solution notebooks; ``untouched``: the release copies as handed out;
- ``editor``: vector_add with its locked graded cells edited to claim full marks, or deleted;
- ``replaced``: vector_add with a cell that replaces the grader's correctness call;
- ``fake_module``: vector_add with a cell that makes ``autograder`` a fake module and clears the
  variable that tells graded cells not to grade in the kernel;
- ``old_schema``: the solution of vector_add whose graded cells claim nbgrader's metadata schema 0
  (nbgrader alone stops the whole run there, and the students after it go ungraded).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBGRADER = [sys.executable, "-m", "nbgrader"]
ACTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
# The act graded end to end in every run; `make test-all` autogrades the others too.
ACT, NOTEBOOK = "act0-start", "vector_add"

REPLACED = (
    "import os\n"
    "import autograder\n"
    "print('NBGRADER_EXECUTION in the kernel:', os.environ.get('NBGRADER_EXECUTION'))\n"
    "autograder.grade_correctness = lambda *a: 2.0\n"
)
FAKE_MODULE = (
    "import os\n"
    "import sys\n"
    "import types\n"
    "fake = types.ModuleType('autograder')\n"
    "fake.grade = fake.grade_correctness = fake.grade_speed = lambda *a: 2.0\n"
    "sys.modules['autograder'] = fake\n"
    "autograder = fake\n"
    "os.environ.pop('NBGRADER_EXECUTION', None)\n"
)


def run(args, cwd) -> subprocess.CompletedProcess:
    # nbgrader_config.py imports autograder, and the kernels grade with it: this checkout's copy, on
    # the CPU (what these tests expect of every graded cell) even on a machine with a GPU.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p), "AUTOGRADER_DEVICE": "cpu"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


def checked(args, cwd) -> subprocess.CompletedProcess:
    proc = run(args, cwd)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def tampered(source: Path, redefine: bool) -> dict:
    """The untouched exercise with its locked graded cells edited to claim full marks or deleted,
    and optionally a cell that redefines the grader's functions and reads nbgrader's variables."""
    nb = json.loads(source.read_text())
    cells = []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            if meta["grade_id"].endswith("speed"):
                continue
            cell["source"] = f"{meta['points']}"
        cells.append(cell)
    if redefine:
        cheat = {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": "import os\nimport autograder\nprint(sorted(k for k in os.environ if 'NBGRADER' in k))\n"
            "autograder.grade_correctness = lambda *args, **kwargs: 2.0\nautograder.grade_speed = lambda *args, **kwargs: 2.0\n",
        }
        cells.insert(2, cheat)
    nb["cells"] = cells
    return nb


def with_cell(notebook: Path, source: str) -> dict:
    """The notebook with a code cell of ``source`` right after its first answer cell."""
    nb = json.loads(notebook.read_text())
    solution_at = next(i for i, c in enumerate(nb["cells"]) if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    nb["cells"].insert(solution_at + 1, {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source})
    return nb


def old_schema(notebook: Path) -> dict:
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            meta["schema_version"] = 0
    return nb


def submit(course: Path, student: str, act: str, name: str, nb: dict) -> Path:
    path = course / "submitted" / student / act / f"{name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))
    return path


def submit_solutions_and_release(course: Path, act: str) -> None:
    """The ``solution`` and ``untouched`` students hand in every notebook of ``act``."""
    for student, folder in (("solution", course / "solutions"), ("untouched", course / "exercises")):
        shutil.copytree(folder / act, course / "submitted" / student / act)


# Every act generated in one Python: nbgrader's own API with the course's configuration, as
# `nbgrader generate_assignment ACT --force` run once per act does, less eight starts of nbgrader.
GENERATE = """
import sys

from nbgrader.apps import NbGraderAPI
from traitlets.config.loader import PyFileConfigLoader

api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=".").load_config())
for act in sys.argv[1:]:
    result = api.generate_assignment(act, force=True)
    if not result["success"]:
        sys.exit(f"generate_assignment {act}:\\n{result.get('log', '')}\\n{result.get('error', '')}")
"""


def generate(course: Path, acts: list[str]) -> None:
    checked([sys.executable, "-c", GENERATE, *acts], course)


def autograde(course: Path, act: str) -> None:
    checked([*NBGRADER, "autograde", act, "--force"], course)
    checked([*NBGRADER, "generate_feedback", act, "--force"], course)


def build(course: Path) -> Path:
    course.mkdir(parents=True)
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    generate(course, ACTS)
    release = course / "exercises" / ACT / f"{NOTEBOOK}.ipynb"
    submit_solutions_and_release(course, ACT)
    submit(course, "editor", ACT, NOTEBOOK, tampered(release, redefine=False))
    submit(course, "replaced", ACT, NOTEBOOK, with_cell(release, REPLACED))
    submit(course, "fake_module", ACT, NOTEBOOK, with_cell(release, FAKE_MODULE))
    submit(course, "old_schema", ACT, NOTEBOOK, old_schema(course / "solutions" / ACT / f"{NOTEBOOK}.ipynb"))
    autograde(course, ACT)
    return course
