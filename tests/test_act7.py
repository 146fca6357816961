"""Act 7 on a CPU: tensors travel back from the worker as checked data, the quantisation judges hold
the learner to the format's bounds (and no looser), the Triton solutions pass under the interpreter,
and an fp8 problem on a GPU older than sm_89 is graded for correctness where it can be."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder import exact, grading, jsonable, registry
from autograder.problems.act7 import quantize as q
from autograder.problems.act7.fp8_matmul import reference as fp8_reference
from autograder.problems.act7.int4_gemv import reference as gemv_reference
from autograder.problems.act7.quantize_judges import int4_round_trip_allowed

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "act7-quantization"
EXACT = ("quantize_int8", "dequantize_int8", "pack_int4", "quantize_int4", "dequantize_int4")


def _solution_cells(notebook: str) -> str:
    """Every solution cell of a notebook, with nbgrader's markers removed: a learner file."""
    nb = json.loads((SOLUTIONS / f"{notebook}.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    text = "import torch\n\n" + "\n\n\n".join(cells) + "\n"
    return re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", text, flags=re.MULTILINE)


def _learner_functions(notebook: str) -> dict:
    namespace: dict = {}
    exec(compile(_solution_cells(notebook), f"{notebook}.py", "exec"), namespace)
    return namespace


# --- tensors as answers ---------------------------------------------------------------------------------


def test_tensors_round_trip_through_the_answer_codec():
    answer = (torch.arange(6, dtype=torch.uint8).reshape(2, 3), {"scale": torch.tensor([1.5, -2.0]).bfloat16()}, 3, torch.empty(0, 4))
    blobs: list = []
    data = jsonable.encode(answer, blobs=blobs)
    back = jsonable.decode(json.loads(json.dumps(data)), payload=b"".join(blobs))
    assert torch.equal(back[0], answer[0]) and back[0].dtype == torch.uint8
    assert torch.equal(back[1]["scale"], answer[1]["scale"]) and back[1]["scale"].dtype == torch.bfloat16
    assert back[2] == 3 and back[3].shape == (0, 4)


def test_without_a_place_for_bytes_a_tensor_is_not_an_answer():
    with pytest.raises(jsonable.NotPlainData):
        jsonable.encode(torch.ones(3))
    with pytest.raises(jsonable.NotPlainData):
        jsonable.encode(torch.ones(3, dtype=torch.complex64), blobs=[])


@pytest.mark.parametrize(
    "forged",
    [
        {"tensor": ["float32", [4], 0, 8]},  # fewer bytes than the shape needs
        {"tensor": ["float32", [2], 8, 8]},  # bytes past the end of the payload
        {"tensor": ["object", [1], 0, 8]},  # a dtype an answer cannot hold
        {"tensor": ["uint8", [-1], 0, 0]},  # a negative dimension
        {"tensor": ["uint8", [2], 0]},  # a field missing
    ],
)
def test_a_forged_tensor_is_refused(forged):
    with pytest.raises(ValueError):
        jsonable.decode(forged, payload=bytes(8))


# --- the quantisation judges --------------------------------------------------------------------------


@pytest.mark.parametrize("name", EXACT)
def test_the_reference_and_the_notebook_solution_pass_every_case(name):
    problem = registry.get(f"act7.{name}")
    learner = _learner_functions("quantize")[name]
    for seed in (1, 2, 3):
        for fn in (getattr(q, name), learner):
            failed = [c for c in exact.check_cases(problem, fn, seed) if not c["passed"]]
            assert not failed, failed[:2]


def _first_failure(name: str, fn) -> str:
    cases = exact.check_cases(registry.get(f"act7.{name}"), fn, seed=5)
    failed = [c["message"] for c in cases if not c["passed"]]
    assert failed, f"a wrong {name} passed every case"
    return failed[0]


def test_one_level_off_at_one_element_fails_the_int8_bound():
    def off_by_one(w):
        qq, scale = q.quantize_int8(w)
        qq = qq.clone()
        qq.view(-1)[-1] += 1 if int(qq.view(-1)[-1]) < 127 else -1
        return qq, scale

    assert "half a step" in _first_failure("quantize_int8", off_by_one)


def test_a_scale_off_by_a_few_units_in_the_last_place_passes_and_by_1e_5_fails():
    def nudged(factor):
        def run(w):
            qq, scale = q.quantize_int8(w)
            return qq, scale * factor

        return run

    problem = registry.get("act7.quantize_int8")
    assert all(c["passed"] for c in exact.check_cases(problem, nudged(1 + 2**-23), 4))
    assert "scale" in _first_failure("quantize_int8", nudged(1 + 1e-5))


def test_swapped_nibbles_are_named_in_the_message():
    assert "swapped" in _first_failure("pack_int4", lambda qq: (qq[:, 0::2] << 4) | qq[:, 1::2])

    def swapped(w, group_size):
        packed, scale, zero = q.quantize_int4(w, group_size)
        return (packed << 4) | (packed >> 4), scale, zero

    assert "swapped" in _first_failure("quantize_int4", swapped)


def test_a_zero_point_off_by_one_fails():
    def shifted(w, group_size):
        packed, scale, zero = q.quantize_int4(w, group_size)
        return packed, scale, torch.where(zero < 15, zero + 1, zero - 1).to(torch.uint8)

    assert "zero" in _first_failure("quantize_int4", shifted)


def test_dequantising_in_another_order_of_operations_passes_and_a_wrong_group_fails():
    problem = registry.get("act7.dequantize_int4")

    def distributed(packed, scale, zero, group_size):
        qq = q.unpack_int4(packed).float()
        return qq * scale.repeat_interleave(group_size, 1) - zero.float().repeat_interleave(group_size, 1) * scale.repeat_interleave(group_size, 1)

    assert all(c["passed"] for c in exact.check_cases(problem, distributed, 6))

    def first_group_only(packed, scale, zero, group_size):
        return q.dequantize_int4(packed, scale[:, :1].expand_as(scale).contiguous(), zero[:, :1].expand_as(zero).contiguous(), group_size)

    assert "wrong values" in _first_failure("dequantize_int4", first_group_only)


def test_the_bounds_are_half_a_step_and_not_a_whole_one():
    w = torch.tensor([[0.0, 1.0, 0.5]])
    scale = torch.tensor([[1.0 / 15]])
    allowed = int4_round_trip_allowed(w, scale, 3)
    assert torch.all(allowed < 0.51 / 15) and torch.all(allowed >= 0.5 / 15)


# --- the Triton problems --------------------------------------------------------------------------------


def test_the_int4_problem_counts_its_bytes_and_never_hands_out_bf16_weights():
    p = registry.get("act7.int4_gemv")
    inputs = p.make_inputs((2, 3, 256), 0, "cpu")
    assert [t.dtype for t in inputs.values()] == [torch.bfloat16, torch.uint8, torch.bfloat16, torch.uint8]
    assert inputs["w_packed"].shape == (3, 128) and inputs["scale"].shape == (3, 2)
    assert p.bytes_moved((1, 8192, 8192)) == 8192 * 8192 / 2 + 3 * 8192 * 64 + 2 * (8192 + 8192)
    assert all(size[0] == 1 for size in p.bench_sizes)
    assert {size[0] for size in p.test_sizes} >= {1, 16}
    assert all(size[2] % gemv_reference.GROUP == 0 for size in [*p.test_sizes, *p.cpu_test_sizes, *p.bench_sizes])
    # The packing is the exact exercise's.
    assert torch.equal(gemv_reference.unpack(inputs["w_packed"]), q.unpack_int4(inputs["w_packed"]))


def test_the_int4_baseline_is_a_bf16_matmul_of_the_same_shape():
    p = registry.get("act7.int4_gemv")
    baseline = p.baseline_for("cpu")
    assert baseline.speed_scale is p.speed_scale
    inputs = p.make_inputs((1, 64, 256), 0, "cpu")
    out = baseline.run(**inputs)
    assert out.shape == (1, 64) and out.dtype == torch.bfloat16
    weights, _ = gemv_reference._dense_weights(64, 256, "cpu")
    assert all(w.shape == (64, 256) and w.dtype == torch.bfloat16 for w in weights)
    # Consecutive calls read different weights (none is served from L2 by its predecessor).
    first, second = baseline.run(**inputs), baseline.run(**inputs)
    assert len(weights) >= 2 and not torch.equal(first, second)


def test_the_fp8_problem_needs_sm89_and_scales_by_row_or_tensor():
    p = registry.get("act7.fp8_matmul")
    assert p.min_compute_capability == (8, 9)
    assert p.compute_dtype == "float8_e4m3fn"
    for scaling, rows in (("tensor", 1), ("row", 17)):
        inputs = p.make_inputs((17, 5, 33, scaling), 0, "cpu")
        assert inputs["a"].dtype == torch.float8_e4m3fn and inputs["scale_a"].shape == (rows,)
        # Quantised to use the format's range: the largest value of each tensor or row is near 448.
        assert float(inputs["a"].float().abs().max()) > 400


def test_the_triton_interpreter_runs_fp8_loads_and_dots_exactly():
    # What the chapter and the fp8 exercise state about CPU grading (checked with Triton 3.9).
    probe = """
import torch, triton, triton.language as tl

@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))

a = torch.randn(16, 16).to(torch.float8_e4m3fn)
b = torch.randn(16, 16).to(torch.float8_e4m3fn)
c = torch.empty(16, 16)
dot_kernel[(1,)](a, b, c, N=16)
print(torch.equal(c, a.float() @ b.float()))
"""
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.strip() == "True", out.stdout + out.stderr


def test_an_older_gpu_gets_a_reason_and_a_cpu_grading(monkeypatch):
    monkeypatch.setattr(grading, "compute_capability", lambda: (7, 5))
    source = (ROOT / "autograder" / "problems" / "act7" / "fp8_matmul" / "submissions" / "upcast_torch.py").read_text()
    result = grading.grade_source(registry.get("act7.fp8_matmul"), source, "fp8_matmul", device="cuda")
    assert "needs sm_89+" in result["speed_note"] and "sm_75" in result["speed_note"]
    assert result["device"] == "cpu" and result["speed_points"] == 0
    assert result["status"] == "REJECT"


def test_a_new_enough_gpu_is_not_redirected(monkeypatch):
    monkeypatch.setattr(grading, "compute_capability", lambda: (9, 0))
    assert grading.older_gpu_note(registry.get("act7.fp8_matmul"), "cuda") is None
    assert grading.older_gpu_note(registry.get("act7.int4_gemv"), "cuda") is None
    assert grading.older_gpu_note(registry.get("act7.fp8_matmul"), "cpu") is None


@pytest.mark.parametrize(("problem", "notebook", "entry"), [("act7.int4_gemv", "int4_gemv", "int4_gemv"), ("act7.fp8_matmul", "fp8_matmul", "fp8_matmul")])
def test_reference_solution_passes_under_the_interpreter(problem, notebook, entry, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    result = grading.grade_source(registry.get(problem), _solution_cells(notebook), entry, device="cpu")
    assert result["status"] == "PASS", f"{result['status']}: {result.get('message')}\n{result.get('traceback', '')}"
    assert result["points"] == registry.get(problem).correctness_points
    assert result["honesty"]["ok"]


def test_fp8_reference_is_the_exact_product():
    inputs = fp8_reference.make_inputs((3, 4, 40, "row"), 1, "cpu")
    exact_product = inputs["a"].double() @ inputs["b"].double().t()
    assert torch.allclose(fp8_reference.reference(**inputs) / (inputs["scale_a"].double()[:, None] * inputs["scale_b"].double()[None, :]), exact_product)


def test_a_learners_gemv_kernel_is_theirs_and_cublas_gemv_is_not():
    from autograder import honesty

    code = "import triton\n\n@triton.jit\ndef int4_gemv_kernel(x_ptr):\n    pass\n\n@triton.jit\ndef gemv2T_kernel(x_ptr):\n    pass\n"
    own = honesty.own_kernel_names(code, "cuda")
    # A Triton kernel of the learner's is theirs under the name the worker compiles it with, whatever
    # it is called; cuBLAS's kernels, of the same name or not, never bear that mark.
    assert own == {"int4_gemv_kernel" + honesty.OWN_MARK, "gemv2T_kernel" + honesty.OWN_MARK}
    assert honesty.is_own("int4_gemv_kernel" + honesty.OWN_MARK, own)
    assert not honesty.is_own("gemv2T_kernel", own)
    assert not honesty.is_own("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false>(...)", own)
