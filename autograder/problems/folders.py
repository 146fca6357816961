"""Problems kept one per folder: ``spec.toml`` says what is graded and how (names, sizes, dtypes,
tolerance, speed metric and scale, points), ``reference.py`` computes it (``make_inputs``,
``reference``, ``library``, ``bytes_moved``, ``flops``, and optionally ``describe_size``,
``baseline`` and ``extra_libraries``). The registry finds every folder under autograder/problems/
that holds a spec (autograder/problems/__init__.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from .. import metrics
from ..problem import LinearScale, Problem

SPEC = "spec.toml"
PROBLEMS_ROOT = Path(__file__).resolve().parent
# What a spec may say, by table: every key is a Problem field of the same name, except the speed
# scale's own (metric, zero_at, full_at) and the sizes (test, cpu_test, bench).
TOP_LEVEL = {"name", "title", "notebook", "function", "language", "library_name", "out_dtype", "compute_dtype", "tolerance_factor", "allowed_library_kernels", "solution_library_ratio", "max_launches", "solution_extra_ratio"}
TABLES = {"sizes": {"test", "cpu_test", "bench"}, "speed": {"metric", "zero_at", "full_at", "solution_target"}, "points": {"correctness", "speed"}}
REQUIRED_FUNCTIONS = ("make_inputs", "reference", "library", "bytes_moved", "flops")
OPTIONAL_FUNCTIONS = ("describe_size", "baseline", "extra_libraries")


class SpecError(ValueError):
    """A problem folder that does not say what the grader needs, said with the file and the key."""


def spec_folders() -> list[Path]:
    return sorted(path.parent for path in PROBLEMS_ROOT.glob(f"*/*/{SPEC}"))


def load(folder: Path) -> Problem:
    """The Problem a folder defines."""
    path = folder / SPEC
    spec = tomllib.loads(path.read_text())
    _check_keys(path, spec)
    module = importlib.import_module(_module_name(folder) + ".reference")
    missing = [name for name in REQUIRED_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise SpecError(f"{folder / 'reference.py'} must define {', '.join(missing)}")
    sizes, speed, points = spec.get("sizes", {}), spec.get("speed", {}), spec.get("points", {})
    fields = {key: spec[key] for key in TOP_LEVEL if key in spec}
    if "allowed_library_kernels" in fields:
        fields["allowed_library_kernels"] = tuple(fields["allowed_library_kernels"])
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
