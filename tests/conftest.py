import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Tools installed beside this interpreter (nbgrader runs `alembic`, the book test `jupyter-book`) must
# be found by subprocesses even when the virtual environment is not activated.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
# Child processes inherit this: a stray TRITON_INTERPRET from the caller must not leak into GPU runs.
os.environ.setdefault("AUTOGRADER_CACHE_DIR", str(ROOT / "_build" / "autograder-cache"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; run by `make test-gpu`, deselected by `make test`")
