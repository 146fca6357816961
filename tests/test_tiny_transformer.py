"""The tiny random-weight transformer shared by Acts 6 and 8: cached decoding equals the full causal
forward, GQA is grouped-query (not a copy per head), weights are a function of the seed."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from autograder.tiny_config import BENCH, TINY, TinyConfig
from autograder.tiny_numerics import apply_rope, rope_tables
from autograder.tiny_transformer import TinyTransformer, greedy_generate

MQA = dataclasses.replace(TINY, n_heads=4, n_kv_heads=1)
MHA = dataclasses.replace(TINY, n_heads=4, n_kv_heads=4)


def prompt(batch: int, seq: int, seed: int = 1, vocab: int = TINY.vocab_size) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("config", [TINY, MQA, MHA], ids=["gqa", "mqa", "mha"])
def test_decode_step_by_step_equals_the_full_causal_forward(config):
    model = TinyTransformer(config, seed=3)
    tokens = prompt(2, 23)
    full = model(tokens)
    cache = model.new_cache(2)
    prefix = 5
    stepwise = [model.prefill(tokens[:, :prefix], cache)]
    for position in range(prefix, tokens.shape[1]):
        stepwise.append(model.decode_step(tokens[:, position], cache)[:, None])
    stepwise = torch.cat(stepwise, dim=1)
    assert stepwise.shape == full.shape == (2, 23, config.vocab_size)
    torch.testing.assert_close(stepwise, full, rtol=1e-4, atol=1e-4)
    assert cache.lengths.tolist() == [23, 23]


def test_chunked_prefill_equals_one_prefill():
    model = TinyTransformer(TINY, seed=0)
    tokens = prompt(1, 30)
    cache = model.new_cache(1)
    chunks = torch.cat([model.prefill(tokens[:, :11], cache), model.prefill(tokens[:, 11:], cache)], dim=1)
    torch.testing.assert_close(chunks, model(tokens), rtol=1e-4, atol=1e-4)


def test_one_decode_step_serves_sequences_of_different_lengths():
    """Each sequence decodes at its own position: a batch of two different-length sequences gives the
    logits each would get alone (what continuous batching relies on)."""
    model = TinyTransformer(TINY, seed=2)
    short, long = prompt(1, 4, seed=5), prompt(1, 13, seed=6)
    cache = model.new_cache(2)
    alone = []
    for row, tokens in enumerate((short, long)):
        single = model.new_cache(1)
        model.prefill(tokens, single)
        cache.k[:, row], cache.v[:, row], cache.lengths[row] = single.k[:, 0], single.v[:, 0], single.lengths[0]
        alone.append(model.decode_step(torch.tensor([7]), single))
    together = model.decode_step(torch.tensor([7, 7]), cache)
    torch.testing.assert_close(together, torch.cat(alone), rtol=1e-4, atol=1e-4)
    assert cache.lengths.tolist() == [5, 14]


def test_gqa_shares_each_kv_head_across_its_group():
    """With n_kv_heads < n_heads the K/V projections are smaller than Q's, and the attention of a
    GQA model equals that of the MHA model whose K/V heads are the GQA ones repeated per group."""
    assert TINY.n_kv_heads < TINY.n_heads
    gqa = TinyTransformer(TINY, seed=4)
    assert gqa.layers[0].wk.shape == (TINY.n_kv_heads * TINY.head_dim, TINY.dim)
    assert gqa.layers[0].wq.shape == (TINY.n_heads * TINY.head_dim, TINY.dim)
    mha = TinyTransformer(MHA, seed=4)
    with torch.no_grad():
        for name, tensor in gqa.state_dict().items():
            if not name.endswith(("wk", "wv")):
                mha.state_dict()[name].copy_(tensor)
        for gqa_block, mha_block in zip(gqa.layers, mha.layers, strict=True):
            for name in ("wk", "wv"):
                grouped = getattr(gqa_block, name).view(TINY.n_kv_heads, 1, TINY.head_dim, TINY.dim)
                repeated = grouped.expand(-1, TINY.group_size, -1, -1).reshape(MHA.n_heads * TINY.head_dim, TINY.dim)
                getattr(mha_block, name).copy_(repeated)
    tokens = prompt(2, 17)
    torch.testing.assert_close(gqa(tokens), mha(tokens), rtol=1e-4, atol=1e-4)
    assert gqa.new_cache(1).k.shape[2] == TINY.n_kv_heads


def test_weights_are_a_function_of_the_seed():
    a, b, c = TinyTransformer(TINY, seed=7), TinyTransformer(TINY, seed=7), TinyTransformer(TINY, seed=8)
    for (name, pa), pb, pc in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name
        assert not torch.equal(pa, pc), name
    tokens = prompt(1, 9)
    assert torch.equal(a(tokens), b(tokens))


def test_activations_stay_order_one_through_a_deep_model():
    deep = dataclasses.replace(TINY, n_layers=16)
    model = TinyTransformer(deep, seed=0)
    x = model.embed[prompt(2, 32)]
    positions = torch.arange(32).expand(2, 32)
    mask = torch.ones(32, 32, dtype=torch.bool).tril().expand(2, 32, 32)
    for block in model.layers:
        q, k, v = model._qkv(block, x, positions)
        x = model._output(block, x, model._attend(q, k, v, mask))
        rms = float(x.pow(2).mean().sqrt())
        assert 0.3 < rms < 3.0, f"residual stream RMS {rms:.3f} drifted away from 1"
    logits = model._logits(x)
    assert 0.5 < float(logits.std()) < 10.0


def test_greedy_generation_is_deterministic_and_not_constant():
    model = TinyTransformer(TINY, seed=0)
    tokens = greedy_generate(model, [1, 2, 3, 4], 12)
    assert tokens == greedy_generate(model, [1, 2, 3, 4], 12)
    assert len(set(tokens)) > 2, "random weights should not collapse onto one token"
    full = model(torch.tensor([[1, 2, 3, 4] + tokens[:-1]]))[0, 3:].argmax(-1).tolist()
    assert full == tokens


def test_bfloat16_decode_follows_float32():
    model32 = TinyTransformer(TINY, seed=1)
    model16 = TinyTransformer(TINY, seed=1, dtype=torch.bfloat16)
    assert model16.layers[0].wq.dtype == torch.bfloat16
    tokens = prompt(2, 12)
    cache = model16.new_cache(2)
    model16.prefill(tokens[:, :-1], cache)
    logits16 = model16.decode_step(tokens[:, -1], cache)
    assert logits16.dtype == torch.float32
    reference = model32(tokens)[:, -1]
    error = (logits16 - reference).abs().max() / reference.abs().max()
    assert error < 0.1, f"bf16 logits differ from float32 by {float(error):.3f} of their scale"


def test_rope_is_a_rotation():
    cos, sin = rope_tables(TINY, "cpu")
    x = torch.randn(3, 10, TINY.head_dim)
    rotated = apply_rope(x, cos[:10], sin[:10])
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[:, 0], x[:, 0])  # position 0 is the identity


def test_configs_and_cache_arithmetic():
    assert TINY.kv_bytes_per_token(4) == 2 * TINY.n_layers * TINY.n_kv_heads * TINY.head_dim * 4
    assert BENCH.n_heads % BENCH.n_kv_heads == 0
    # BENCH's decode reads about 1 GB of bf16 weights per step: far more than any GPU's L2.
    assert 0.9e9 < 2 * BENCH.parameter_count() < 1.1e9
    with pytest.raises(ValueError, match="multiple"):
        TinyConfig(n_heads=4, n_kv_heads=3)
    model = TinyTransformer(TINY)
    with pytest.raises(ValueError, match="same length"):
        cache = model.new_cache(2)
        cache.lengths[1] = 3
        model.prefill(prompt(2, 3), cache)
    assert math.isfinite(float(model(prompt(1, TINY.max_seq_len)).sum()))



def test_a_float64_model_decodes_in_a_batch_as_it_does_alone():
    """In float64 batching changes the logits by rounding only (~1e-15), so no greedy choice flips: the
    serving exercise's engine runs the model this way."""
    model = TinyTransformer(TINY, seed=6, dtype=torch.float64)
    prompts = [prompt(1, 9, seed=2), prompt(1, 4, seed=3)]
    alone, cache = [], model.new_cache(2)
    for row, tokens in enumerate(prompts):
        single = model.new_cache(1)
        model.prefill(tokens, single)
        cache.k[:, row], cache.v[:, row], cache.lengths[row] = single.k[:, 0], single.v[:, 0], single.lengths[0]
        alone.append(model.decode_step(torch.tensor([5]), single))
    together = model.decode_step(torch.tensor([5, 5]), cache)
    assert together.dtype == torch.float64
    torch.testing.assert_close(together, torch.cat(alone), rtol=1e-12, atol=1e-12)
