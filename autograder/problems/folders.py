"""Problems kept one per folder: ``spec.toml`` says what is graded and how, ``reference.py`` computes
it. The registry finds every folder under autograder/problems/ that holds a spec
(autograder/problems/__init__.py).

A spec's ``kind`` (default "kernel") says which of the grader's three kinds of problem it is:
- "kernel": names, sizes, dtypes, tolerance, speed metric and scale, points; ``reference.py``
  defines ``make_inputs``, ``reference``, ``library``, ``bytes_moved``, ``flops`` and optionally
  ``describe_size``, ``baseline``, ``extra_libraries`` and ``error_model`` (autograder.problem.Problem).
- "exact": a Python answer with one right value; ``reference.py`` defines ``make_cases`` and
  ``reference`` and optionally ``judge`` (answers with tensors, or right within a derived bound) and
  ``describe_case`` (how the report names a case whose arguments are too long to print);
  the spec may set ``rel_tol`` (autograder.python_problems.ExactProblem).
- "measured": a Python answer checked against the grader's own measurement on this GPU; the spec
  names the function's ``arguments`` and may set ``compute_dtype`` (the matmul ceiling the judge
  measures, float32 unless set) and ``ceiling_dtypes`` (more matmul ceilings, for operations of
  other dtypes), ``reference.py`` defines ``make_ops`` and ``judge``
  (autograder.measured.MeasuredProblem).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from .. import metrics
from ..measured import MeasuredProblem
from ..problem import LinearScale, Problem
from ..python_problems import ExactProblem

SPEC = "spec.toml"
PROBLEMS_ROOT = Path(__file__).resolve().parent
# What a spec may say, by table: every key is a Problem field of the same name, except the speed
# scale's own (metric, zero_at, full_at) and the sizes (test, cpu_test, bench).
TOP_LEVEL = {"kind", "name", "title", "notebook", "function", "language", "library_name", "out_dtype", "compute_dtype", "tolerance_factor", "allowed_library_kernels", "solution_library_ratio", "min_compute_capability", "max_launches", "max_reads", "solution_extra_ratio", "replay_values", "refused_language"}
TABLES = {"sizes": {"test", "cpu_test", "bench"}, "speed": {"metric", "zero_at", "full_at", "solution_target"}, "points": {"correctness", "speed"}}
REQUIRED_FUNCTIONS = ("make_inputs", "reference", "library", "bytes_moved", "flops")
OPTIONAL_FUNCTIONS = ("describe_size", "baseline", "extra_libraries", "error_model")
# The Python exercises' specs: what each kind may say, and what its reference.py defines.
ANSWER_KEYS = {"exact": {"kind", "name", "title", "notebook", "function", "rel_tol"}, "measured": {"kind", "name", "title", "notebook", "function", "arguments", "compute_dtype", "ceiling_dtypes"}}
ANSWER_FUNCTIONS = {"exact": ("make_cases", "reference"), "measured": ("make_ops", "judge")}
ANSWER_OPTIONAL_FUNCTIONS = {"exact": ("judge", "describe_case"), "measured": ()}
ANSWER_CLASSES = {"exact": ExactProblem, "measured": MeasuredProblem}


class SpecError(ValueError):
    """A problem folder that does not say what the grader needs, said with the file and the key."""


def spec_folders() -> list[Path]:
    return sorted(path.parent for path in PROBLEMS_ROOT.glob(f"*/*/{SPEC}"))


def load(folder: Path) -> Problem | ExactProblem | MeasuredProblem:
    """The problem a folder defines."""
    path = folder / SPEC
    spec = tomllib.loads(path.read_text())
    kind = spec.get("kind", "kernel")
    if kind in ANSWER_KEYS:
        return _load_answer(folder, path, spec, kind)
    if kind != "kernel":
        raise SpecError(f"{path}: kind must be kernel, exact or measured, not {kind!r}")
    _check_keys(path, spec)
    module = importlib.import_module(_module_name(folder) + ".reference")
    missing = [name for name in REQUIRED_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise SpecError(f"{folder / 'reference.py'} must define {', '.join(missing)}")
    sizes, speed, points = spec.get("sizes", {}), spec.get("speed", {}), spec.get("points", {})
    fields = {key: spec[key] for key in TOP_LEVEL - {"kind"} if key in spec}
    if "allowed_library_kernels" in fields:
        fields["allowed_library_kernels"] = tuple(fields["allowed_library_kernels"])
    if "replay_values" in fields:
        fields["replay_values"] = tuple(fields["replay_values"])
    if "refused_language" in fields:
        fields["refused_language"] = tuple(fields["refused_language"])
    if "min_compute_capability" in fields:
        fields["min_compute_capability"] = tuple(fields["min_compute_capability"])
    fields.update({name: getattr(module, name) for name in REQUIRED_FUNCTIONS})
    fields.update({name: getattr(module, name) for name in OPTIONAL_FUNCTIONS if hasattr(module, name)})
    if "cpu_test" in sizes:
        fields["cpu_test_sizes"] = _sizes(sizes["cpu_test"])
    if "solution_target" in speed:
        fields["solution_target"] = float(speed["solution_target"])
    fields.update({f"{part}_points": float(points[part]) for part in ("correctness", "speed") if part in points})
    try:
        scale = LinearScale(metrics.named(speed["metric"]), float(speed["zero_at"]), float(speed["full_at"]))
        return Problem(test_sizes=_sizes(sizes["test"]), bench_sizes=_sizes(sizes["bench"]), speed_scale=scale, **fields)
    except KeyError as exc:
        raise SpecError(f"{path} needs {exc.args[0]!r} (see autograder/problems/folders.py)") from None


def _load_answer(folder: Path, path: Path, spec: dict, kind: str):
    """An exact or measured problem: its spec's names and points, its reference.py's functions."""
    unknown = set(spec) - ANSWER_KEYS[kind] - {"points"}
    if unknown:
        raise SpecError(f"{path}: a problem of kind {kind!r} has no key {', '.join(sorted(unknown))} (known: {', '.join(sorted(ANSWER_KEYS[kind] | {'points'}))})")
    points = spec.get("points", {})
    if set(points) - {"correctness"}:
        raise SpecError(f"{path}: a problem of kind {kind!r} has correctness points only")
    module = importlib.import_module(_module_name(folder) + ".reference")
    missing = [name for name in ANSWER_FUNCTIONS[kind] if not callable(getattr(module, name, None))]
    if missing:
        raise SpecError(f"{folder / 'reference.py'} must define {', '.join(missing)}")
    fields = {key: spec[key] for key in ANSWER_KEYS[kind] - {"kind"} if key in spec}
    for listed in ("arguments", "ceiling_dtypes"):
        if listed in fields:
            fields[listed] = tuple(fields[listed])
    if "correctness" in points:
        fields["correctness_points"] = float(points["correctness"])
    fields.update({name: getattr(module, name) for name in ANSWER_FUNCTIONS[kind]})
    fields.update({name: getattr(module, name) for name in ANSWER_OPTIONAL_FUNCTIONS[kind] if callable(getattr(module, name, None))})
    try:
        return ANSWER_CLASSES[kind](**fields)
    except TypeError as exc:
        raise SpecError(f"{path}: {exc} (see autograder/problems/folders.py)") from None


def _check_keys(path: Path, spec: dict) -> None:
    for key, value in spec.items():
        if key in TABLES:
            unknown = set(value) - TABLES[key]
            if unknown:
                raise SpecError(f"{path}: [{key}] has no key {', '.join(sorted(unknown))} (known: {', '.join(sorted(TABLES[key]))})")
        elif key not in TOP_LEVEL:
            raise SpecError(f"{path}: unknown key {key!r}")


def _sizes(values: list) -> tuple:
    # TOML has arrays, the grader's shapes are tuples (hashable, printed as 4096x4096).
    return tuple(tuple(v) if isinstance(v, list) else v for v in values)


def _module_name(folder: Path) -> str:
    return ".".join(("autograder", "problems", *folder.relative_to(PROBLEMS_ROOT).parts))
