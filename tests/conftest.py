import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Tools installed beside this interpreter (nbgrader runs `alembic`, the book test `jupyter-book`) must
# be found by subprocesses even when the virtual environment is not activated.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
# The grader caches measured ceilings here unless the caller chose a folder (the GPU run does).
os.environ.setdefault("AUTOGRADER_CACHE_DIR", str(ROOT / "_build" / "autograder-cache"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; run by `make test-gpu`, deselected by `make test`")
