"""Correctness, in the judge: the learner's answer against a float64 reference.

The tolerance is derived, not guessed: the library computes the same thing at the task's precision,
its largest error against the float64 reference is measured on these very inputs, and the learner
may be ``tolerance_factor`` times as far off, plus a few units in the last place of each value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

MISMATCHES_SHOWN = 5


@dataclass
class Tolerance:
    atol: float
    rtol: float
    library_max_error: float

    def allowed(self, reference: torch.Tensor) -> torch.Tensor:
        return self.atol + self.rtol * reference.abs()


def derive_tolerance(reference: torch.Tensor, library_out: torch.Tensor, dtype: torch.dtype, factor: float, model_out: torch.Tensor | None = None) -> Tolerance:
    """``factor`` times the library's largest error against ``reference`` (never less than a few ulps),
    or times ``model_out``'s where that is larger: a problem's error model, what the task's precision
    costs whichever path the library takes for a shape (cuBLAS runs a TF32 matrix-vector product in
    float32, without tensor cores). ``library_max_error`` stays the library's own."""
    eps = torch.finfo(dtype).eps
    ref = reference.double()
    library_error = float((library_out.double() - ref).abs().max()) if ref.numel() else 0.0
    model_error = float((model_out.double() - ref).abs().max()) if model_out is not None and ref.numel() else 0.0
    largest = float(ref.abs().max()) if ref.numel() else 0.0
    atol = factor * max(library_error, model_error, eps * largest)
    return Tolerance(atol=atol, rtol=factor * eps, library_max_error=library_error)


def problem_tolerance(problem, inputs: dict, reference: torch.Tensor, library_out: torch.Tensor, dtype: torch.dtype) -> Tolerance:
    """One case's tolerance: ``derive_tolerance`` with the problem's ``error_model`` (a reference.py
    hook, run on the same inputs) where it has one."""
    model = getattr(problem, "error_model", None)
    return derive_tolerance(reference, library_out, dtype, problem.tolerance_factor, None if model is None else model(**inputs))


def close_enough(out: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> bool:
    """``compare``'s verdict alone, in float32: the check of every timed call, where the tolerance
    (the library's error and more) is far above float32's rounding and an output of 67M values
    would cost more in float64 than the call itself."""
    got, want = out.float(), expected.float()
    ok = (got - want).abs() <= tol.atol + tol.rtol * want.abs()
    ok &= torch.isfinite(got) | ~torch.isfinite(want)
    return bool(ok.all())


def compare(out: torch.Tensor, reference: torch.Tensor, tol: Tolerance) -> tuple[bool, float, list]:
    """Elementwise |out - ref| <= atol + rtol*|ref|; NaN and Inf never pass where the reference is finite."""
    got = out.double()
    ref = reference.double()
    error = (got - ref).abs()
    ok = error <= tol.allowed(ref)
    ok &= torch.isfinite(got) | ~torch.isfinite(ref)
    if bool(ok.all()):
        return True, float(error.max()) if error.numel() else 0.0, []
    bad = (~ok).flatten().nonzero().flatten()[:MISMATCHES_SHOWN].tolist()
    mismatches = []
    for flat in bad:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), ref.shape)) if ref.dim() else ()
        mismatches.append(
            {
                "index": list(index),
                "got": float(got.flatten()[flat]),
                "expected": float(ref.flatten()[flat]),
                "allowed_error": float(tol.allowed(ref.flatten()[flat])),
            }
        )
    finite_error = error[torch.isfinite(error)]
    worst = float(finite_error.max()) if finite_error.numel() else float("nan")
    if not bool(torch.isfinite(got).all()):
        worst = float("nan")
    return False, worst, mismatches


def count_wrong(out: torch.Tensor, reference: torch.Tensor, tol: Tolerance) -> str:
    got, ref = out.double(), reference.double()
    ok = ((got - ref).abs() <= tol.allowed(ref)) & (torch.isfinite(got) | ~torch.isfinite(ref))
    wrong = int((~ok).sum())
    return f"{wrong} of {ok.numel()}"


@dataclass
class Case:
    """One correctness case: its size, the verdict, and the numbers behind it."""

    size: Any
    passed: bool
    message: str = ""
    max_error: float | None = None
    allowed_error: float | None = None
    mismatches: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["size"] = self.size if isinstance(self.size, (int, float, str)) else repr(self.size)
        return d


def screen(device: str, dtype: str, shape: tuple, contiguous: bool, on: str, out_dtype: str, expected_shape: tuple) -> str | None:
    """What is wrong with an output's place, type or layout, before its values are compared."""
    if device != on:
        return f"output is on {device}, the inputs are on {on}"
    if dtype != out_dtype:
        return f"output dtype is {dtype}, expected {out_dtype}"
    if tuple(shape) != tuple(expected_shape):
        return f"output shape is {tuple(shape)}, expected {tuple(expected_shape)}"
    if not contiguous:
        return "output is not contiguous: return a contiguous tensor"
    return None


def judge_values(size: Any, out: torch.Tensor, reference: torch.Tensor, tol: Tolerance) -> Case:
    ok, worst, mismatches = compare(out, reference, tol)
    allowed = tol.atol + tol.rtol * (float(reference.abs().max()) if reference.numel() else 0.0)
    if ok:
        return Case(size, True, "", worst, allowed)
    return Case(size, False, f"{count_wrong(out, reference, tol)} wrong values", worst, allowed, mismatches)


def prepare_case(problem, size: Any, seed: int, device: str) -> tuple[dict, torch.Tensor, Tolerance]:
    """A case's inputs, float64 reference and tolerance, which depend only on the problem, the size
    and the seed: computed once for the several functions a test checks against one case."""
    inputs = problem.make_inputs(size, seed, device)
    reference = problem.reference(**inputs)
    return inputs, reference, problem_tolerance(problem, inputs, reference, problem.library(**inputs), getattr(torch, problem.out_dtype))


def check_case(problem, fn, size: Any, seed: int, device: str, prepared: tuple | None = None) -> Case:
    """The same checks in one process, for trusted functions only: a problem's library and the
    known-wrong answers its tests prove it rejects. A learner's code never runs this way.
    ``prepared``: what prepare_case gave for this problem, size, seed and device."""
    from . import arrays

    originals, reference, tol = prepared or prepare_case(problem, size, seed, device)
    inputs = {k: arrays.clone_preserving_strides(v) for k, v in originals.items()}
    try:
        out = arrays.from_learner(fn(*[arrays.to_learner(v, problem.language) for v in inputs.values()]), problem.language)
    except TypeError as exc:
        return Case(size, False, f"wrong output type: {exc}")
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and not torch.equal(value, originals[name]):
            return Case(size, False, f"your function changed its input {name!r}; inputs must be left as they are")
    device_name = "cuda" if out.is_cuda else "cpu"
    message = screen(device_name, str(out.dtype).removeprefix("torch."), tuple(out.shape), out.is_contiguous(), device, problem.out_dtype, tuple(reference.shape))
    if message:
        return Case(size, False, message)
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and arrays.overlaps(out, value):
            return Case(size, False, f"output shares memory with the input {name!r}; return a new tensor")
    return judge_values(size, out, reference, tol)
