"""softmax(q k^T / sqrt(D)) v for bfloat16 q, k, v of shape (B, H, S, D), without the causal mask:
everything but the name is shared with act4.flash_attention_causal (autograder/problems/act4/attention.py)."""

from __future__ import annotations

from ..attention import BACKENDS, HEAD_DIMS, baseline_for_problem, bytes_moved, describe_size, flops, library_for, make_inputs, reference

__all__ = ["make_inputs", "reference", "library", "baseline", "bytes_moved", "flops", "describe_size", "HEAD_DIMS", "BACKENDS"]

NAME = "act4.flash_attention"
baseline = baseline_for_problem(NAME)
library = library_for(baseline)
