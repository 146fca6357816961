"""Act 8 on a CPU: the eager decode layer and step are the tiny model's, the bubble arithmetic is exact
and its wrong readings fail, the launch counter rejects several launches, the CUDA-graph target is
checked, and the reference solutions pass under the Triton interpreter (exercise 8.3 with one program)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from autograder import exact, grading, launch_count, megakernels, registry
from autograder import tiny_transformer as tt
from autograder.problems.act8.bubbles import reference as bubbles
from autograder.tiny_config import TINY
from autograder.tiny_numerics import rms_norm

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "act8-megakernels"


def _learner_file(notebook: str) -> str:
    """The given and solution code cells of a notebook, without nbgrader's markers: a learner's file."""
    cells = json.loads((SOLUTIONS / f"{notebook}.ipynb").read_text())["cells"]
    ids = {f"{notebook}_blocks", f"{notebook}_stages", f"{notebook}_solution"}
    text = "\n\n".join("".join(c["source"]) for c in cells if c["metadata"]["nbgrader"]["grade_id"] in ids)
    return re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", text + "\n", flags=re.MULTILINE)


def _model_inputs(model: tt.TinyTransformer, cache: tt.KVCache, token: torch.Tensor, cached: int) -> dict:
    inputs = {"token": token, "embed": model.embed}
    for name in megakernels.LAYER_WEIGHTS:
        inputs[name] = torch.stack([getattr(block, name) for block in model.layers])
    inputs.update(final_norm=model.final_norm, lm_head=model.lm_head, k_cache=cache.k[:, 0, :, :cached].contiguous(),
                  v_cache=cache.v[:, 0, :, :cached].contiguous(), cos=model.rope_cos[cached], sin=model.rope_sin[cached])
    return inputs


def test_eager_step_is_the_tiny_models_decode_step():
    model = tt.TinyTransformer(TINY, seed=3)
    cached = 9
    cache = model.new_cache(1)
    model.prefill(torch.randint(TINY.vocab_size, (1, cached), generator=torch.Generator().manual_seed(1)), cache)
    token = torch.tensor([17])
    inputs = _model_inputs(model, cache, token, cached)
    expected = model.decode_step(token, cache)[0]
    torch.testing.assert_close(megakernels.decode_step_eager(**inputs), expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(megakernels.decode_step_reference(**inputs).float(), expected, rtol=1e-5, atol=1e-5)


def test_eager_layer_is_one_layer_of_the_step():
    inputs = megakernels.step_inputs((61, 40, 1, 5, 1, 8, 72, 3), 4, "cpu")
    x = inputs["embed"][inputs["token"][0]]
    layer = megakernels.decode_layer_eager(x, *(inputs[name][0] for name in megakernels.LAYER_WEIGHTS), inputs["k_cache"][0], inputs["v_cache"][0],
                                           inputs["cos"], inputs["sin"])
    logits = torch.nn.functional.linear(rms_norm(layer, inputs["final_norm"], megakernels.EPS), inputs["lm_head"])
    torch.testing.assert_close(logits, megakernels.decode_step_eager(**inputs), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["act8.decode_layer", "act8.decode_step"])
def test_kernel_problems_are_consistent(name):
    p = registry.get(name)
    assert p.language == "triton" and set(p.cpu_test_sizes) <= set(p.test_sizes)
    for size in p.cpu_test_sizes:
        first, again, other = (p.make_inputs(size, seed, "cpu") for seed in (5, 5, 6))
        assert all(torch.equal(first[k], again[k]) for k in first), "inputs must depend only on the seed"
        reference = p.reference(**first)
        library_error = (p.library(**first).double() - reference).abs().max().item()
        assert 0 < library_error < 1e-4, f"{size}: the float32 eager baseline is {library_error} from the float64 reference"
        # Wrong answers are far outside any tolerance derived from that error.
        for wrong in (torch.zeros_like(reference), torch.full_like(reference, reference.mean().item()), p.reference(**other)):
            assert (wrong - reference).abs().max().item() > 1e3 * library_error
        assert p.bytes_moved(size) > 0 and p.flops(size) > 0
    assert registry.get("act8.decode_step").max_launches == 1


def test_bubble_reference_on_hand_made_traces():
    report = bubbles.bubble_report
    event = megakernels.event
    assert report([]) == {"launches": 0, "busy_us": 0.0, "gap_us": 0.0, "saving": 0.0}
    # Two kernels 10 us apart, a copy under the first, host events that are not GPU work.
    events = [event("k1", "kernel", 100.0, 4.0), event("copy", "gpu_memcpy", 101.0, 2.0), event("k2", "kernel", 114.0, 6.0),
              event("cudaLaunchKernel", "cuda_runtime", 0.0, 300.0), event("aten::mm", "cpu_op", 50.0, 90.0)]
    assert report(events) == {"launches": 3, "busy_us": 10.0, "gap_us": 10.0, "saving": 0.5}
    assert report(list(reversed(events))) == report(events)


def test_synthetic_traces_have_what_the_exercise_must_handle():
    events = megakernels.synthetic_trace(7, kernels=300, streams=2)
    cats = {e["cat"] for e in events}
    assert {"kernel", "gpu_memcpy", "cuda_runtime", "cpu_op"} <= cats
    assert any(e["ph"] != "X" for e in events), "flow and instant events must be in the trace"
    gpu = [e for e in events if e["cat"] in megakernels.GPU_CATEGORIES]
    assert sum(e["dur"] for e in gpu) > bubbles.bubble_report(events)["busy_us"], "some GPU work must overlap"
    assert all(e["ts"] * megakernels.TICKS_PER_US == int(e["ts"] * megakernels.TICKS_PER_US) for e in events)


def test_bubble_cases_fail_zeros_and_another_seeds_answers():
    p = registry.get("act8.bubbles")
    cases, other = p.make_cases(11), p.make_cases(12)
    expected = [p.reference(**c) for c in cases]
    for wrong in ([{k: 0 for k in e} for e in expected], [p.reference(**c) for c in other]):
        assert any(exact.mismatch(w, e, p.rel_tol) for w, e in zip(wrong, expected, strict=True))
    assert all(p.describe_case(c).startswith("a trace") for c in cases), "no live profile on a CPU"


def test_launch_count():
    calls = [{"kernels": ["decode_step_kernel"], "launches": 1}, {"kernels": ["qkv_kernel"], "launches": 6}]
    assert launch_count.judge_cpu(calls[:1], 1) is None
    assert not launch_count.judge_cpu(calls, 1)["ok"]
    assert launch_count.judge_cpu(calls, None) is None
    phases = {"timed (1,)": {"kernels": [{"name": "decode_step_kernel", "calls": 10}, {"name": "void at::native::fill_kernel", "calls": 10}]}}
    charged = {"timed (1,)": [5.0] * 10}
    assert launch_count.judge_gpu(phases, {"decode_step_kernel"}, charged, 1) is None
    phases["timed (1,)"]["kernels"].append({"name": "attention_kernel", "calls": 10})
    verdict = launch_count.judge_gpu(phases, {"decode_step_kernel", "attention_kernel"}, charged, 1)
    assert not verdict["ok"] and "2 times per call" in verdict["message"]


def test_solution_must_beat_the_cuda_graph():
    p = registry.get("act8.decode_step")
    row = {"candidate": {"median_ms": 0.10}, "library": {"median_ms": 0.25}, "ratio": 2.5,
           "extra_libraries": {"eager step as a CUDA graph": {"median_ms": 0.105}}}
    missed = p.solution_shortfalls(row)
    assert len(missed) == 1 and "CUDA graph" in missed[0]
    row["extra_libraries"]["eager step as a CUDA graph"]["median_ms"] = 0.12
    assert p.solution_shortfalls(row) == []


@pytest.mark.parametrize(("problem", "notebook", "entry"), [("act8.decode_layer", "decode_layer", "decode_layer"), ("act8.decode_step", "decode_step", "decode_step")])
def test_reference_solution_passes_on_cpu(problem, notebook, entry, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("AUTOGRADER_DEVICE", "cpu")
    result = grading.grade_source(registry.get(problem), _learner_file(notebook), entry, device="cpu")
    assert result["status"] == "PASS", f"{result['status']}: {result.get('message')}\n{result.get('traceback', '')}"
    assert result["points"] == registry.get(problem).correctness_points
    assert "launches" not in result["honesty"]["message"]
