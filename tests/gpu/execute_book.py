"""Execute the book's demo notebooks and keep the executed copies: `python tests/gpu/execute_book.py OUTDIR`.

Runs every book/**/*.ipynb (or only the notebooks named after OUTDIR) with nbclient, in kernel
python3, each from its own folder, and writes each executed notebook to OUTDIR under the same path
relative to the repository root (OUTDIR/book/act2-rooflines/measured-roofline.ipynb, ...). Prints one
line per notebook with its wall time. Exits 1 if any cell raised, after running all of them; a failed
notebook is still written, with its outputs up to and including the error, so the error can be read.

The project's GPU run calls this so the book shows outputs measured on a real GPU; the book build
itself never executes notebooks (execute_notebooks: off in _config.yml).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600  # per cell
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # tracebacks come coloured; the one-line summary should not


def book_notebooks() -> list[Path]:
    return sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _relative(path: Path) -> Path:
    """The notebook's path from the repository root (or just its name, for one from elsewhere)."""
    path = path.resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)


def _prepare_environment() -> None:
    # The kernel inherits this process's environment. The notebooks import the course package
    # (`autograder`) from the repository, whether or not it is pip-installed on the machine.
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    # The GPU run exports MPLBACKEND=Agg for its scripts; in a kernel that would stop plt.show()
    # from putting the figures into the notebook, so the kernel gets its own inline default.
    os.environ.pop("MPLBACKEND", None)


def execute(path: Path, outdir: Path) -> tuple[bool, float, str]:
    """Run one notebook; write the executed copy. Returns (succeeded, seconds, error summary)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    error = ""
    try:
        client.execute()
    except Exception as exc:  # CellExecutionError, a cell timeout, a dead kernel: all are failures
        lines = [line for line in ANSI_COLOUR.sub("", str(exc)).splitlines() if line.strip()]
        error = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
    seconds = time.perf_counter() - started
    target = outdir / _relative(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return not error, seconds, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="folder for the executed notebooks")
    parser.add_argument("notebooks", nargs="*", type=Path, help="only these notebooks (default: every book/**/*.ipynb)")
    args = parser.parse_args(argv)

    notebooks = [p.resolve() for p in args.notebooks] or book_notebooks()
    if not notebooks:
        print("no notebooks under book/")
        return 0
    _prepare_environment()
    outdir = args.outdir.resolve()
    failed = 0
    for path in notebooks:
        ok, seconds, error = execute(path, outdir)
        name = _relative(path)
        if ok:
            print(f"{name}: ok in {seconds:.1f} s", flush=True)
        else:
            failed += 1
            print(f"{name}: FAILED after {seconds:.1f} s: {error}", flush=True)
    print(f"{len(notebooks) - failed} of {len(notebooks)} notebooks ran without errors; executed copies in {outdir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
