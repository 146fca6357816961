"""What a worker printed, for a verdict or a report: the start and end of its log."""

from __future__ import annotations

import os

LOG_HEAD = LOG_TAIL = 3000


def read_log(path: str) -> str:
    """The start and end of what a worker printed, as text."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size <= LOG_HEAD + LOG_TAIL:
                return f.read().decode("utf-8", "replace")
            head = f.read(LOG_HEAD).decode("utf-8", "replace")
            f.seek(size - LOG_TAIL)
            tail = f.read().decode("utf-8", "replace")
        return f"{head}\n... [{size - LOG_HEAD - LOG_TAIL} bytes of output left out] ...\n{tail}"
    except OSError:
        return ""
