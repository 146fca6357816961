"""On a GPU: the tiny transformer of Acts 6 and 8 gives the CPU's logits, and its bf16 cached decode
follows the float32 forward (tests/test_tiny_transformer.py checks the rest on a CPU)."""

from __future__ import annotations

import pytest
import torch

from autograder.tiny_config import TINY
from autograder.tiny_transformer import TinyTransformer

pytestmark = pytest.mark.gpu


def test_cuda_matches_cpu():
    tokens = torch.randint(0, TINY.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
    cpu = TinyTransformer(TINY, seed=5)(tokens)
    gpu = TinyTransformer(TINY, seed=5, device="cuda")(tokens.cuda()).cpu()
    torch.testing.assert_close(gpu, cpu, rtol=1e-3, atol=1e-3)


def test_cuda_bf16_decode_follows_float32():
    tokens = torch.randint(0, TINY.vocab_size, (3, 20), generator=torch.Generator().manual_seed(1), device="cpu").cuda()
    model16 = TinyTransformer(TINY, seed=2, device="cuda", dtype=torch.bfloat16)
    cache = model16.new_cache(3)
    model16.prefill(tokens[:, :-1], cache)
    logits16 = model16.decode_step(tokens[:, -1], cache)
    reference = TinyTransformer(TINY, seed=2, device="cuda")(tokens)[:, -1]
    assert float((logits16 - reference).abs().max() / reference.abs().max()) < 0.1
