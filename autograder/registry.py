"""Looking problems up: by name, all of them, or those a notebook grades. The first lookup imports
every act's problem definitions (autograder.problems), which register themselves."""

from __future__ import annotations

from .problem import _REGISTRY


def get(name: str):
    from . import problems  # noqa: F401  (registers every act's problems)

    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"no exercise is called {name!r}; the exercises are: {known}") from None


def all_problems() -> list:
    from . import problems  # noqa: F401

    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def for_notebook(path: str) -> list:
    """The problems graded in a notebook, matched on '<act folder>/<notebook name>'."""
    from pathlib import PurePath

    parts = PurePath(path).parts
    key = "/".join(parts[-2:]).removesuffix(".ipynb")
    return [p for p in all_problems() if p.notebook == key]
