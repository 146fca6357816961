"""The reference solutions' code for the book's demos, from the solution notebooks that ship in the package."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# A wheel (pip install from the repository, as in Colab) carries them as autograder/solutions/; in
# the repository itself (an editable install, or PYTHONPATH) they are the solutions/ folder beside it.
_FOLDERS = (_PACKAGE / "solutions", _PACKAGE.parent / "solutions")
_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\n", re.MULTILINE)


def solution_notebook(notebook: str) -> Path:
    """The solution notebook of an exercise named as in the problems: "act4-kernels/flash_attention"."""
    for folder in _FOLDERS:
        path = folder / f"{notebook}.ipynb"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no solution notebook {notebook}.ipynb in {' or '.join(str(f) for f in _FOLDERS)}")


def solution_source(notebook: str) -> str:
    """The code of the notebook's solution cells, without nbgrader's BEGIN/END SOLUTION lines."""
    cells = json.loads(solution_notebook(notebook).read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) + "\n" for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    if not sources:
        raise ValueError(f"{notebook}.ipynb has no solution cell")
    return _MARKER.sub("", "\n".join(sources))


def load_solution(notebook: str, function: str):
    """The function ``function`` that the notebook's solution cells define, run from a file of its own
    (Triton reads a kernel's source through ``inspect``, which needs one)."""
    source = solution_source(notebook)
    file = Path(tempfile.mkdtemp(prefix="gpu-brrr-reference-")) / f"{Path(notebook).name}.py"
    file.write_text(source, encoding="utf-8")
    namespace = {"__name__": f"reference_{Path(notebook).name}", "__file__": str(file)}
    exec(compile(source, str(file), "exec"), namespace)
    return namespace[function]
