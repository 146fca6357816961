"""Checking answers that are numbers, strings or structures of them: cost models and formulas."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any


def mismatch(got: Any, expected: Any, rel_tol: float, where: str = "") -> str | None:
    """None when ``got`` matches ``expected``; otherwise a sentence saying where and how it differs."""
    label = where or "the answer"
    if isinstance(expected, bool) or isinstance(got, bool):
        return None if got is expected else f"{label} is {got!r}, expected {expected!r}"
    if isinstance(expected, (int, float)):
        if not isinstance(got, (int, float)):
            return f"{label} is a {type(got).__name__}, expected a number"
        if isinstance(expected, float) and math.isnan(expected):
            return None if isinstance(got, float) and math.isnan(got) else f"{label} is {got!r}, expected NaN"
        if math.isclose(got, expected, rel_tol=rel_tol, abs_tol=0.0) or got == expected:
            return None
        return f"{label} is {got!r}, expected {expected!r}"
    if isinstance(expected, str):
        return None if got == expected else f"{label} is {got!r}, expected {expected!r}"
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{label} is a {type(got).__name__}, expected a dict with keys {sorted(expected)}"
        if set(got) != set(expected):
            return f"{label} has keys {sorted(got)}, expected {sorted(expected)}"
        for key in expected:
            found = mismatch(got[key], expected[key], rel_tol, f"{label}[{key!r}]" if where else f"[{key!r}]")
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return f"{label} is {got!r}, expected {len(expected)} items"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            found = mismatch(g, e, rel_tol, f"{label}[{i}]" if where else f"item {i}")
            if found:
                return found
        return None
    return None if got == expected else f"{label} is {got!r}, expected {expected!r}"


def judge(problem, got: Any, expected: Any, case: dict) -> str | None:
    """None when ``got`` is right for ``case``; otherwise what is wrong. A problem with a ``judge`` of
    its own (tensors checked against a derived error bound, say) decides; the others compare with
    the reference's answer to ``rel_tol``."""
    own = getattr(problem, "judge", None)
    if own is not None:
        return own(got, expected, case)
    return mismatch(got, expected, problem.rel_tol)


def describe_case(case: dict, problem=None) -> str:
    """The case's arguments as the report shows them: the problem's own ``describe_case`` where its
    arguments are too long to print, else tensors by shape and dtype and the rest as written."""
    own = getattr(problem, "describe_case", None)
    if own is not None:
        return own(case)
    return ", ".join(f"{k}={_shown(v)}" for k, v in case.items())


def _shown(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "dtype", None) is not None and hasattr(value, "dim"):
        return f"tensor({'x'.join(str(d) for d in shape) or 'scalar'} {str(value.dtype).removeprefix('torch.')})"
    return repr(value)


def check_cases(problem, fn: Callable, seed: int) -> list[dict]:
    """Every case of the problem: the learner's answer against the reference, on its own copy of
    the inputs. An exception fails that case only."""
    results = []
    for case in problem.make_cases(seed):
        expected = problem.reference(**copy.deepcopy(case))
        shown = describe_case(case, problem)
        try:
            got = fn(**copy.deepcopy(case))
        except Exception as exc:  # noqa: BLE001 -- the learner's exception is this case's verdict
            results.append({"size": shown, "passed": False, "message": f"raised {type(exc).__name__}: {str(exc)[:300]}"})
            continue
        problem_found = judge(problem, got, expected, case)
        results.append({"size": shown, "passed": problem_found is None, "message": problem_found or ""})
    return results


def describe(problem, case: dict) -> str:
    """How the report names a case: the problem's own words for large inputs (a whole trace), else its arguments."""
    custom = getattr(problem, "describe_case", None)
    return custom(case) if custom is not None else ", ".join(f"{k}={v!r}" for k, v in case.items())
