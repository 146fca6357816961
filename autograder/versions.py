"""The versions the grader runs with: printed by the doctor, recorded by every grading and every
grade report."""

from __future__ import annotations

import platform


def installed(packages: tuple[str, ...]) -> dict[str, str | None]:
    """Python's version and each package's, None for one that is missing or fails to import."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in packages:
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 -- a missing or broken optional package is just absent
            versions[name] = None
    return versions
