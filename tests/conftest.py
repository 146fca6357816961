import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Tools installed beside this interpreter (nbgrader runs `alembic`, the book test `jupyter-book`) must
# be found by subprocesses even when the virtual environment is not activated.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
# The grader caches measured ceilings here unless the caller chose a folder (the GPU run does).
os.environ.setdefault("AUTOGRADER_CACHE_DIR", str(ROOT / "_build" / "autograder-cache"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; run by `make test-gpu`, deselected by `make test`")
    config.addinivalue_line("markers", "multigpu: needs 2 or more GPUs visible at once; tests/gpu/run.sh runs these unpinned")
    config.addinivalue_line("markers", "slow: a round trip that `make test` (and CI) leaves to `make test-all`, which runs everything")
    # pytest-timeout's own marker (the GPU image has the plugin; this keeps it known where it is absent).
    config.addinivalue_line("markers", "timeout(seconds): pytest-timeout's limit for one test")
    _pin_worker_to_its_gpu()


# The longest runs of make test, handed out first (pytest-xdist hands tests out in collection order):
# the nbgrader course and the tests that share it on one worker (two minutes in a row), the two pip
# resolutions against PyPI and the book build. Started last, they would end last.
FIRST = ("nbgrader", "tests/test_requirements.py::", "tests/test_book.py::test_book_builds")


def pytest_addoption(parser):
    parser.addoption(
        "--shard", default=None, metavar="I/N",
        help="run every N-th selected test from the I-th (0-based): the GPU run spreads the adversarial suite over calls and GPUs",
    )
    parser.addoption(
        "--cases", default=None, metavar="FILE",
        help="run only the selected tests whose parameter id is a line of FILE, in FILE's order (tests/gpu/pending_verdicts.py writes it)",
    )


def pytest_collection_modifyitems(config, items):
    def first(item) -> bool:
        group = item.get_closest_marker("xdist_group")
        return bool(group and group.args and group.args[0] == "nbgrader") or item.nodeid.startswith(FIRST[1:])

    items.sort(key=lambda item: not first(item))
    shard = config.getoption("--shard")
    if shard:
        index, count = shard_of(shard)
        # Interleaved, so each shard holds its share of every act (Act 4's cases compile for a minute).
        kept = [item for position, item in enumerate(items) if position % count == index]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    listed = config.getoption("--cases")
    if listed:
        items[:] = listed_items(items, Path(listed).read_text().split(), config)


def listed_items(items: list, names: list[str], config) -> list:
    """The items whose parameter id is one of ``names``, in their order (the order xdist hands them
    out: slowest first ends a step sooner); a name that selects nothing is a usage error, not a skip."""
    by_id: dict[str, list] = {}
    for item in items:
        if hasattr(item, "callspec"):
            by_id.setdefault(item.callspec.id, []).append(item)
    unknown = [name for name in names if name not in by_id]
    if unknown:
        raise pytest.UsageError(f"--cases: no selected test has the id {', '.join(unknown[:5])}")
    kept = [item for name in dict.fromkeys(names) for item in by_id[name]]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    return kept


def shard_of(text: str) -> tuple[int, int]:
    """``"2/8"`` -> (2, 8); anything else is a usage error."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard takes I/N (such as 2/8), not {text!r}") from None
    if not 0 <= index < count:
        raise pytest.UsageError(f"--shard {text}: I must be 0 to N-1")
    return index, count


def gpu_for_worker(worker: str, devices: str) -> str:
    """The GPU an xdist worker (``gw0``, ``gw1``, ...) runs on when the GPU run spreads one test at a
    time per GPU over the GPUs listed in ``devices`` ("0,1,2,3")."""
    ids = [d.strip() for d in devices.split(",") if d.strip()]
    return ids[int(worker.removeprefix("gw")) % len(ids)]


def _pin_worker_to_its_gpu() -> None:
    # Set before anything initialises CUDA in this worker; the grading children and notebook
    # kernels it starts inherit it, so every test of the worker, and all it launches, uses one GPU.
    worker, devices = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("GPU_RUN_DEVICES")
    if worker and devices:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_for_worker(worker, devices)


@pytest.fixture(scope="session")
def nbgrader_course(tmp_path_factory) -> Path:
    """Every act generated, Act 0 autograded for each submission the nbgrader tests judge
    (tests/nbgrader_shared.py); tests that read it share the xdist group "nbgrader"."""
    import nbgrader_shared

    return nbgrader_shared.build(tmp_path_factory.mktemp("nbgrader") / "course")
