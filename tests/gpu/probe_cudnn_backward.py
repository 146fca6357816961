"""Why cuDNN's attention backward did not run beside the FlashAttention backward's grading (its
column was empty on two H200s, 2026-11-26): the grader's call on its trial inputs, then the same call
with the random-number tensors on the GPU, then with cuDNN's own forward's saved statistics, each
error printed; where one runs, it is timed at the benchmark sizes beside SDPA's flash backward.

    python tests/gpu/probe_cudnn_backward.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autograder.problems.act4.flash_attention_backward import reference  # noqa: E402

CUDNN_BACKWARD = torch.ops.aten._scaled_dot_product_cudnn_attention_backward


def as_graded(q, k, v, o, lse, do, causal):
    return reference.cudnn_backward(q, k, v, o, lse, do, causal)


def rng_on_gpu(q, k, v, o, lse, do, causal):
    s, rng = q.shape[2], torch.zeros((), dtype=torch.long, device=q.device)
    return CUDNN_BACKWARD(do, q, k, v, o, lse.unsqueeze(-1), rng, rng, None, None, None, s, s, 0.0, causal)


def own_forward(q, k, v, o, lse, do, causal):
    """cuDNN's own forward first (untimed in a grading it would be a different O and L)."""
    out, stats, cum_q, cum_k, max_q, max_k, seed, offset, _ = torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal)
    return CUDNN_BACKWARD(do, q, k, v, out, stats, seed, offset, None, cum_q, cum_k, max_q, max_k, 0.0, causal)


def main() -> None:
    for variant in (as_graded, rng_on_gpu, own_forward):
        for size in ((1, 1, 16, 64, False), (1, 1, 16, 128, True), (2, 4, 256, 128, False)):
            inputs = reference.make_inputs(size, 0, "cuda")
            try:
                grads = variant(**inputs)
                torch.cuda.synchronize()
                expected = reference.flash_backward(**inputs)
                worst = max((g.float() - e.float()).abs().max().item() for g, e in zip(grads, expected, strict=True))
                print(f"{variant.__name__} {size}: ran; largest difference from the flash backward {worst:.3g}")
            except Exception as error:  # noqa: BLE001 - the probe reports every refusal as it is
                print(f"{variant.__name__} {size}: {type(error).__name__}: {str(error)[:300]}")
    for size in ((4, 32, 4096, 128, False), (4, 32, 4096, 64, True)):
        inputs = reference.make_inputs(size, 0, "cuda")
        for name, run in (("flash", reference.flash_backward), ("cudnn, rng on the GPU", rng_on_gpu)):
            try:
                ms = triton.testing.do_bench(lambda run=run, inputs=inputs: run(**inputs), return_mode="median")
                print(f"{size} {name}: {ms:.3f} ms")
            except Exception as error:  # noqa: BLE001
                print(f"{size} {name}: {type(error).__name__}: {str(error)[:200]}")


if __name__ == "__main__":
    main()
