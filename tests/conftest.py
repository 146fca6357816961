import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Child processes inherit this: a stray TRITON_INTERPRET from the caller must not leak into GPU runs.
os.environ.setdefault("AUTOGRADER_CACHE_DIR", str(ROOT / "_build" / "autograder-cache"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; run by `make test-gpu`, deselected by `make test`")
