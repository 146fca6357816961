"""The grader's public calls: grade a function (from a notebook cell or a script) or a module's text.
Each grading runs in a judge process of its own (autograder.sandbox); this module only starts it
and shows what it decided."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import warnings
from collections.abc import Callable

from . import problem as problem_mod
from . import registry, sandbox, source, verdict


def pick_device() -> str:
    forced = os.environ.get("AUTOGRADER_DEVICE")
    if forced in ("cpu", "cuda"):
        return forced
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


NESTED = (
    "a grading cannot start inside a grading: the code being graded called the grader. Keep graded "
    "calls out of the functions you hand in (in a script, under `if __name__ == \"__main__\":`)."
)


def inside_a_grading() -> bool:
    """True in the grader's own processes (the judge and the worker that runs the learner's code)."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    return bool(os.environ.get("AUTOGRADER_GRADING")) or getattr(main, "name", "") in ("autograder._worker", "autograder._judge")


def compute_capability() -> tuple[int, int]:
    import torch

    return tuple(torch.cuda.get_device_capability())


def older_gpu_note(problem, device: str) -> str | None:
    """Why this GPU cannot run ``problem``'s kernels (it needs a newer compute capability), or None."""
    need = getattr(problem, "min_compute_capability", None)
    if device != "cuda" or not need:
        return None
    have = compute_capability()
    if have >= tuple(need):
        return None
    return (
        f"needs sm_{need[0]}{need[1]}+ (compute capability {need[0]}.{need[1]}: Ada, Hopper, Blackwell); this GPU is "
        f"sm_{have[0]}{have[1]}, so correctness was graded under the Triton interpreter and speed is not graded"
    )


def grade_source(problem, code: str, entry: str, device: str | None = None, speed: bool = True, timeout: float | None = None) -> dict:
    """Grade ``entry`` defined in the module text ``code`` (in a judge process of its own). A problem
    whose hardware this GPU lacks (fp8 tensor cores on a T4 or an A100) is graded for correctness as
    on a CPU, under the Triton interpreter, and says why."""
    device = device or pick_device()
    if inside_a_grading():
        return verdict.score(problem, {"problem": problem.name, "status": "REFUSED", "message": NESTED, "cases": [], "speed": []}, device)
    if problem.needs_gpu and device != "cuda":
        return verdict.score(problem, verdict.needs_gpu_result(problem), device)
    note = older_gpu_note(problem, device)
    if note is not None:
        result = grade_source(problem, code, entry, "cpu", speed=False, timeout=timeout)
        result["speed_note"] = note
        return result
    timed = speed and device == "cuda" and (problem_mod.has_speed_grade(problem) or (problem_mod.is_distributed(problem) and problem.speed_points > 0))
    kind = problem.kind
    result = sandbox.run(problem.name, problem.language, kind, code, entry, device, timed, timeout=timeout)
    if "points" not in result:
        result = verdict.score(problem, result, device)
    return result


def grade_function(problem_name: str, fn: Callable, device: str | None = None, speed: bool = True) -> dict:
    problem = registry.get(problem_name)
    device = device or pick_device()
    if problem.needs_gpu and device != "cuda":
        return verdict.score(problem, verdict.needs_gpu_result(problem), device)
    try:
        code, entry = source.for_function(fn, getattr(problem, "also_needs", ()))
    except source.SourceError as exc:
        return verdict.score(problem, {"problem": problem.name, "status": "ERROR", "message": str(exc)}, device)
    key = (problem.name, device, speed, entry, hashlib.sha256(code.encode()).hexdigest())
    if key not in _SESSION:
        # The correctness cell and the speed cell of one exercise share one grading run.
        _SESSION.clear()
        _SESSION[key] = grade_source(problem, code, entry, device, speed)
        _record(_SESSION[key])
    return _SESSION[key]


RESULTS_DIR_VARIABLE = "AUTOGRADER_RESULTS_DIR"


def _record(result: dict) -> None:
    """With AUTOGRADER_RESULTS_DIR set (the project's GPU run sets it while it executes the solution
    notebooks), keep each graded cell's result as JSON: the speed benchmark is then built from the
    very gradings the notebooks received instead of timing every solution a second time."""
    folder = os.environ.get(RESULTS_DIR_VARIABLE)
    if not folder or not result.get("problem"):
        return
    import json
    from pathlib import Path

    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    kept = {k: v for k, v in result.items() if k != "output"}
    (path / f"{result['problem']}.json").write_text(json.dumps(kept, default=str))


_SESSION: dict = {}


def _graded_cell(problem_name: str, fn: Callable, part: str) -> float:
    if inside_a_grading():
        # Before anything else: inside a grading the problem definitions are not even importable.
        print(NESTED)
        return 0.0
    from . import report

    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        result = grade_function(problem_name, fn)
        report.show(result, part)
    key = {"all": "points", "correctness": "correctness_points", "speed": "speed_points"}[part]
    return float(result[key])


def grade(problem_name: str, fn: Callable) -> float:
    """Grade ``fn`` for the exercise ``problem_name``; return all the points earned.

    The learner's code runs in a separate process; the report is printed (and the roofline drawn)
    here. Nothing is written to stderr: nbgrader would give a graded cell zero for it.
    """
    return _graded_cell(problem_name, fn, "all")


def grade_correctness(problem_name: str, fn: Callable) -> float:
    """The correctness cell of an exercise: its points, and the per-case report."""
    return _graded_cell(problem_name, fn, "correctness")


def grade_speed(problem_name: str, fn: Callable) -> float:
    """The speed cell of an exercise: its points (none unless correct and honest), the per-size
    report and the roofline."""
    return _graded_cell(problem_name, fn, "speed")
