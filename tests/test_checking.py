"""Correctness checking: derived tolerances, mismatch reports and the problem definitions' own proof
that wrong answers fail."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from autograder import canary, checking, registry


def _as_torch(problem):
    """The same problem with torch in and out, so its checks run without CuPy or a GPU."""
    return dataclasses.replace(problem, language="python")


PROBLEMS = [p for p in registry.all_problems() if p.language in ("triton", "cupy")]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_library_passes_and_wrong_answers_fail_at_every_cpu_size(problem):
    """At each CPU size, the library's answer passes, and zeros, a constant, an input itself and
    another seed's right answer all fail (at sizes of more than one element), each checked against
    the same case: its float64 reference is computed once."""
    p = _as_torch(problem)
    sizes = p.sizes_for("cpu")
    assert any(math.prod(_as_shape(size)) > 1 for size in sizes), f"{p.name} has no CPU test size with more than one element"
    passed_wrong = []
    for i, size in enumerate(sizes):
        case = checking.prepare_case(p, size, seed=7 + i, device="cpu")
        library = checking.check_case(p, lambda *a: p.library(*a), size, seed=7 + i, device="cpu", prepared=case)
        assert library.passed, library
        if math.prod(_as_shape(size)) > 1:
            for wrong, fn in _wrong_answers(p, size).items():
                if checking.check_case(p, fn, size, seed=7 + i, device="cpu", prepared=case).passed:
                    passed_wrong.append(f"{wrong} at {size}")
    assert not passed_wrong, f"wrong answers passed for {p.name}: {', '.join(passed_wrong)}"


def _as_shape(size):
    """The dimensions of a size, without its options (a causal flag, a scaling name)."""
    dims = size if isinstance(size, tuple) else (size,)
    return tuple(d for d in dims if isinstance(d, int) and not isinstance(d, bool))


def _wrong_answers(problem, size):
    """Zeros, a constant, an input itself, and the right answer for another seed's inputs of the same size."""

    def first_tensor(*args):
        return next(a for a in args if isinstance(a, torch.Tensor))

    def other_seed(*args):
        other = problem.make_inputs(size, 987654321, "cpu")
        return problem.library(**other)

    return {
        "zeros": lambda *a: torch.zeros_like(first_tensor(*a)),
        "constant": lambda *a: torch.full_like(first_tensor(*a), 1.0),
        "input itself": lambda *a: first_tensor(*a).clone(),
        "another seed's answer": other_seed,
    }


def test_tolerance_is_derived_from_the_library_error():
    ref = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    lib = (ref + torch.tensor([0.0, 1e-6, 0.0], dtype=torch.float64)).float()
    tol = checking.derive_tolerance(ref, lib, torch.float32, factor=4.0)
    assert tol.library_max_error == pytest.approx(1e-6, rel=0.2)
    assert tol.atol == pytest.approx(4 * tol.library_max_error)
    assert tol.rtol == pytest.approx(4 * torch.finfo(torch.float32).eps)


def test_tolerance_never_below_a_few_ulps_when_the_library_is_exact():
    ref = torch.tensor([8.0, -8.0], dtype=torch.float64)
    tol = checking.derive_tolerance(ref, ref.float(), torch.float32, factor=4.0)
    assert tol.atol == pytest.approx(4 * torch.finfo(torch.float32).eps * 8.0)


def test_compare_reports_the_first_mismatches():
    ref = torch.arange(20, dtype=torch.float64)
    out = ref.clone().float()
    out[3] = 100.0
    out[7] = float("nan")
    tol = checking.Tolerance(atol=1e-6, rtol=1e-6, library_max_error=0.0)
    ok, worst, mismatches = checking.compare(out, ref, tol)
    assert not ok
    assert [m["index"] for m in mismatches] == [[3], [7]]
    assert mismatches[0]["got"] == 100.0 and mismatches[0]["expected"] == 3.0
    assert worst != worst  # NaN: a NaN anywhere makes the worst error NaN


def test_compare_shows_at_most_five():
    ref = torch.zeros(100, dtype=torch.float64)
    out = torch.ones(100)
    ok, _, mismatches = checking.compare(out, ref, checking.Tolerance(1e-9, 0.0, 0.0))
    assert not ok and len(mismatches) == checking.MISMATCHES_SHOWN


VECTOR_ADD = _as_torch(registry.get("act0.vector_add"))


def _check(fn, size=1025):
    return checking.check_case(VECTOR_ADD, fn, size, seed=3, device="cpu")


def test_output_checks_name_what_is_wrong():
    assert "dtype" in _check(lambda x, y: (x + y).double()).message
    assert "shape" in _check(lambda x, y: (x + y)[:-1]).message
    assert "contiguous" in _check(lambda x, y: torch.stack([x + y, x + y], 1)[:, 0]).message
    assert "shares memory" in _check(lambda x, y: x.add_(0)).message
    assert "torch.Tensor" in _check(lambda x, y: (x + y).tolist()).message


def test_mutating_an_input_fails():
    def sneaky(x, y):
        out = x + y
        y.zero_()
        return out

    case = _check(sneaky)
    assert not case.passed and "changed its input 'y'" in case.message


def test_a_tensor_subclass_is_refused():
    class Lazy(torch.Tensor):
        pass

    case = _check(lambda x, y: (x + y).as_subclass(Lazy))
    assert not case.passed and "subclass" in case.message


def test_poison_is_a_nan_canary_covering_the_allocator_block():
    poisoned = canary.poison(1023, torch.float32, "cpu")
    assert poisoned.nbytes == 4092 and poisoned.block_bytes == 4096
    word = torch.tensor([canary.CANARY_BITS], dtype=torch.int32).view(torch.float32)
    assert torch.isnan(word).all()
    # On the CPU there is no caching allocator, so the spare-bytes check never claims a write.
    assert not canary.wrote_past_the_end(torch.empty(1023), poisoned)


def test_guarded_blocks_read_as_nan_until_written():
    blocks = canary.GuardedBlocks("cpu")
    out = blocks.allocate(4 * 1000)[:1000].view(torch.float32)
    assert bool(torch.isnan(out).all())
    out.fill_(2.0)
    assert blocks.wrote_past_the_end(out) is False


@pytest.mark.parametrize("nbytes", [4 * 1000, 6, 1])
def test_guarded_blocks_see_a_store_one_byte_past_the_end(nbytes):
    blocks = canary.GuardedBlocks("cpu")
    block = blocks.allocate(nbytes)
    raw = block.view(torch.uint8)
    raw[:nbytes] = 7
    start = raw[:nbytes]
    assert blocks.wrote_past_the_end(start) is False
    raw[nbytes] = 7
    assert blocks.wrote_past_the_end(start) is True


def test_guarded_blocks_see_the_last_guard_byte_and_ignore_other_tensors():
    blocks = canary.GuardedBlocks("cpu")
    block = blocks.allocate(4000)
    block.view(torch.uint8)[4000 + canary.GUARD_BYTES - 1] = 0
    assert blocks.wrote_past_the_end(block) is True
    assert blocks.wrote_past_the_end(torch.empty(1000)) is None


def test_an_error_model_larger_than_the_library_error_sets_the_tolerance():
    ref = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    lib = (ref + torch.tensor([0.0, 1e-6, 0.0], dtype=torch.float64)).float()
    model = (ref + torch.tensor([0.0, 0.0, 1e-3], dtype=torch.float64)).float()
    tol = checking.derive_tolerance(ref, lib, torch.float32, factor=4.0, model_out=model)
    assert tol.atol == pytest.approx(4e-3, rel=1e-3) and tol.library_max_error == pytest.approx(1e-6, rel=0.2)
    assert checking.derive_tolerance(ref, model, torch.float32, 4.0, model_out=lib).atol == pytest.approx(tol.atol)
