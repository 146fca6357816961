"""Correctness, in the judge: the learner's answer against a float64 reference.

The tolerance is derived, not guessed: the library computes the same thing at the task's precision,
its largest error against the float64 reference is measured on these very inputs, and the learner
may be ``tolerance_factor`` times as far off, plus a few units in the last place of each value.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

MISMATCHES_SHOWN = 5


@dataclass
class Tolerance:
    atol: float
    rtol: float
    library_max_error: float

    def allowed(self, reference: torch.Tensor) -> torch.Tensor:
        return self.atol + self.rtol * reference.abs()


def derive_tolerance(reference: torch.Tensor, library_out: torch.Tensor, dtype: torch.dtype, factor: float) -> Tolerance:
    eps = torch.finfo(dtype).eps
    ref = reference.double()
    library_error = float((library_out.double() - ref).abs().max()) if ref.numel() else 0.0
    largest = float(ref.abs().max()) if ref.numel() else 0.0
    atol = factor * max(library_error, eps * largest)
    return Tolerance(atol=atol, rtol=factor * eps, library_max_error=library_error)


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
