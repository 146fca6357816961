"""The book builds with zero warnings, and the pages a learner needs are all there.

This runs the same command as a release build, `jupyter-book build . -W -n --keep-going`, into a
temporary folder (so it never touches a developer's own _build/), then checks the HTML: every
Act 0 page, both exercise notebooks, and the Colab launch links that the course's Colab path
depends on. It needs no GPU: notebooks are never executed by the book build. `make test` (and so CI)
runs it; `make book` runs the same build.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.results import latest_run

REPO_ROOT = Path(__file__).resolve().parent.parent

# Every page the table of contents promises, as its HTML path under _build/html.
BOOK_PAGES = [
    "book/intro.html",
    "book/act0-start/index.html",
    "book/act0-start/three-ways.html",
    "book/act0-start/grading.html",
    "book/act0-start/instructors.html",
    "book/act0-start/doctor.html",
    "book/act0-start/results.html",
    "book/act2-rooflines/index.html",
    "book/act2-rooflines/fusion.html",
    "book/act2-rooflines/inference-arithmetic.html",
    "book/act2-rooflines/exercises.html",
    "book/roadmap.html",
]
EXERCISE_NOTEBOOKS = [
    "exercises/act0-start/vector_add",
    "exercises/act0-start/saxpy",
]
# Built from _config.yml's repository and launch_buttons settings; a change there that breaks the
# "open in Colab" path of the course should fail here rather than in front of a learner.
COLAB_PREFIX = "https://colab.research.google.com/github/gpu-brrr/gpu-brrr/blob/main/"
# The roofline plots written by `python -m autograder bench` into the latest benchmark run, which the
# results page shows as figures.
ROOFLINES = ["act0.vector_add-roofline.png", "act0.saxpy-roofline.png"]


def _jupyter_book_command() -> list[str]:
    """The jupyter-book of the interpreter running the tests (a venv's, not whatever is on PATH)."""
    beside_python = Path(sys.executable).with_name("jupyter-book")
    if beside_python.exists():
        return [str(beside_python)]
    found = shutil.which("jupyter-book")
    if found:
        return [found]
    return [sys.executable, "-m", "jupyter_book"]


def test_book_builds_without_warnings_and_has_every_page(tmp_path: Path) -> None:
    command = _jupyter_book_command() + [
        "build",
        str(REPO_ROOT),
        "--path-output",
        str(tmp_path),
        "-W",  # any warning fails the build ...
        "-n",  # ... including cross-references that do not resolve,
        "--keep-going",  # but report all of them at once.
    ]
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    log = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"jupyter-book build failed (exit {completed.returncode}):\n{log[-8000:]}"
    assert "WARNING" not in log, f"the build printed warnings:\n{log[-8000:]}"

    html = tmp_path / "_build" / "html"
    missing = [page for page in BOOK_PAGES + [f"{nb}.html" for nb in EXERCISE_NOTEBOOKS] if not (html / page).is_file()]
    assert not missing, f"pages missing from the built book: {missing}"

    for notebook in EXERCISE_NOTEBOOKS:
        page = (html / f"{notebook}.html").read_text(encoding="utf-8")
        link = f"{COLAB_PREFIX}{notebook}.ipynb"
        assert link in page, f"{notebook}.html has no Colab launch link {link}"

    # The results page pulls in act0.md of the latest benchmark run: its table comes on top of the
    # page's own table that explains the columns, and names that run's date.
    results = (html / "book/act0-start/results.html").read_text(encoding="utf-8")
    latest_table = (latest_run() / "act0.md").read_text(encoding="utf-8")
    assert results.count("<table") >= 2, "the Act 0 results page shows no measured table: is act0.md in the latest benchmark run?"
    date_and_python = re.search(r"on \d{4}-\d{2}-\d{2} with Python [^,]+", latest_table).group(0)
    assert date_and_python in results, f"the Act 0 results page does not show the latest benchmark run's table ({date_and_python})"
    # The committed run was made on an H200; the page (through the included table and the captions)
    # must say so, since a number without its device means little.
    assert "NVIDIA H200" in results, "the Act 0 results page does not name the GPU the numbers came from"
    # Both rooflines the grader drew are shown as figures, and the image files were copied into the book.
    images = re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', results)
    for roofline in ROOFLINES:
        shown = [src for src in images if src.endswith(roofline)]
        assert shown, f"the Act 0 results page has no <img> for {roofline}; it shows {images}"
        assert (html / "book/act0-start" / shown[0]).resolve().is_file(), f"{shown[0]} is not in the built book"
    # What the graded cells printed on the H200, pulled in with {literalinclude}.
    assert "kernels launched: add_kernel" in results, "the graded-cell report is missing from the results page"
    # The wide results table is styled by the book's own stylesheet.
    assert "_static/custom.css" in results and (html / "_static" / "custom.css").is_file()

    # The pip command on the Colab page is built from the one repository URL in _config.yml.
    three_ways = (html / "book/act0-start/three-ways.html").read_text(encoding="utf-8")
    assert "git+https://github.com/gpu-brrr/gpu-brrr" in three_ways
    assert "{{" not in three_ways, "a MyST substitution was left unexpanded"

    # Act 2: the chapter quotes the ceilings measured on the H200 and draws the roofline from them.
    act2 = (html / "book/act2-rooflines/index.html").read_text(encoding="utf-8")
    for number in ("4,141 GB/s", "50.5 TFLOP/s", "797.4 TFLOP/s", "NVIDIA H200"):
        assert number in act2, f"the Act 2 page no longer quotes {number}"
    shown = [src for src in re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', act2) if src.endswith("roofline-h200.png")]
    assert shown and (html / "book/act2-rooflines" / shown[0]).resolve().is_file(), "the Act 2 roofline figure is missing"
    inference = (html / "book/act2-rooflines/inference-arithmetic.html").read_text(encoding="utf-8")
    assert "Llama-3-8B" in inference and "8,030,261,248" in inference, "the inference page lost its worked Llama-3-8B example"


def test_act1_generations_table_agrees_with_the_exercise_spec_table() -> None:
    """The ridge points the 1.5 page prints are the datasheet rate over the datasheet bandwidth, and
    exercise 1.4's spec-table inputs reproduce the same peaks."""
    from autograder.problems.act1 import gpu_specs as act1

    page = (REPO_ROOT / "book" / "act1-hierarchy" / "generations.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| bf16 ridge point"))
    printed = [int(cell) for cell in re.findall(r"\|\s*(\d+)\s*(?=\|)", row)]
    expected = [round(act1.ridge_points(**act1.SPEC_TABLE[name])["bf16"]) for name in ("A100", "H100", "H200", "B200")]
    assert printed == expected, (printed, expected)
    toc = (REPO_ROOT / "_toc.yml").read_text(encoding="utf-8")
    for page_name in ("index", "launch-mapping", "memory-hierarchy", "coalescing", "generations", "measure-hierarchy", "exercises"):
        assert f"book/act1-hierarchy/{page_name}" in toc
    for notebook in ("indexing_2d", "transpose", "reduction", "gpu_generations", "predict_traffic"):
        assert f"exercises/act1-hierarchy/{notebook}" in toc
