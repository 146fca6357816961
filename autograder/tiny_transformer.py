"""A tiny Llama-style transformer with random weights, for the serving (Act 6) and megakernel (Act 8) acts.

Nothing is downloaded: every weight is drawn from a seed, so the same seed gives the same model on any
machine, and a grader can rebuild the learner's model from (config, seed). The architecture is the one
every open model since Llama shares: token embedding, then ``n_layers`` blocks of

    h = x + Attention(RMSNorm(x))        grouped-query attention with rotary position embeddings
    x = h + SwiGLU(RMSNorm(h))           down(silu(gate(h)) * up(h))

then a final RMSNorm and an untied output projection to the vocabulary.

API (all plain PyTorch; weights are ``[out_features, in_features]`` like ``nn.Linear``):

    model = TinyTransformer(TINY, seed=0, device="cpu", dtype=torch.float32)
    logits = model(tokens)                          # [batch, seq] -> [batch, seq, vocab], causal, no cache
    cache = model.new_cache(batch=2)                # an empty KV cache for 2 sequences
    logits = model.prefill(tokens, cache)           # [batch, seq] -> [batch, seq, vocab]; fills the cache
    logits = model.decode_step(next_tokens, cache)  # [batch] -> [batch, vocab]; one token per sequence
    out = greedy_generate(model, prompt, 8)         # the prompt's 8 greedy continuation tokens

Each sequence of a cache has its own length (``cache.lengths``), so one decode step serves sequences
of different lengths, as a serving engine's batch does. Of the shapes (autograder.tiny_config), ``TINY``
is small enough for CPU tests; ``BENCH`` (about 0.5 B parameters, 1 GB in bf16) makes a decode step read
far more weight bytes than any L2 holds, so a GPU's decode is memory-bound, and it still fits a 16 GB T4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

# BENCH is not used here: the Act 6 notebooks import it from this module, beside the model.
from .tiny_config import BENCH, TINY, TinyConfig  # noqa: F401
from .tiny_numerics import apply_rope, rms_norm, rope_tables, wide_dtype


@dataclass
class KVCache:
    """Keys and values of every layer, [n_layers, batch, n_kv_heads, max_seq_len, head_dim], and the
    number of valid positions of each sequence, ``lengths`` [batch] (int64). Keys are stored after RoPE."""

    k: torch.Tensor
    v: torch.Tensor
    lengths: torch.Tensor

    @property
    def batch(self) -> int:
        return self.k.shape[1]


class Block(torch.nn.Module):
    """One transformer layer; its weights are the attributes named below (``[out, in]``)."""

    def __init__(self, config: TinyConfig):
        super().__init__()
        c = config
        self.attn_norm = torch.nn.Parameter(torch.empty(c.dim), requires_grad=False)
        self.wq = torch.nn.Parameter(torch.empty(c.n_heads * c.head_dim, c.dim), requires_grad=False)
        self.wk = torch.nn.Parameter(torch.empty(c.n_kv_heads * c.head_dim, c.dim), requires_grad=False)
        self.wv = torch.nn.Parameter(torch.empty(c.n_kv_heads * c.head_dim, c.dim), requires_grad=False)
        self.wo = torch.nn.Parameter(torch.empty(c.dim, c.n_heads * c.head_dim), requires_grad=False)
        self.mlp_norm = torch.nn.Parameter(torch.empty(c.dim), requires_grad=False)
        self.w_gate = torch.nn.Parameter(torch.empty(c.mlp_hidden, c.dim), requires_grad=False)
        self.w_up = torch.nn.Parameter(torch.empty(c.mlp_hidden, c.dim), requires_grad=False)
        self.w_down = torch.nn.Parameter(torch.empty(c.dim, c.mlp_hidden), requires_grad=False)

    def mlp(self, x: torch.Tensor, eps: float) -> torch.Tensor:
        h = rms_norm(x, self.mlp_norm, eps)
        return F.linear(F.silu(F.linear(h, self.w_gate)) * F.linear(h, self.w_up), self.w_down)


class TinyTransformer(torch.nn.Module):
    """The model, weights drawn from ``seed`` (float32 on the CPU, then cast and moved, so a seed gives the
    same weights on every device, up to the dtype's rounding)."""

    def __init__(self, config: TinyConfig = TINY, seed: int = 0, device="cpu", dtype: torch.dtype = torch.float32):
        super().__init__()
        self.config = config
        c = config
        self.embed = torch.nn.Parameter(torch.empty(c.vocab_size, c.dim), requires_grad=False)
        self.layers = torch.nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.final_norm = torch.nn.Parameter(torch.empty(c.dim), requires_grad=False)
        self.lm_head = torch.nn.Parameter(torch.empty(c.vocab_size, c.dim), requires_grad=False)
        self._init_weights(seed)
        self.to(device=device, dtype=dtype)
        cos, sin = rope_tables(c, device)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    @torch.no_grad()
    def _init_weights(self, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)

        def normal(parameter, std):
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)

        c = self.config
        # Variance-preserving scales (std 1/sqrt(fan_in)) keep every projection's output O(1); the two
        # projections that write into the residual stream are further scaled by 1/sqrt(2 * n_layers) so the
        # stream's size stays O(1) after all the layers add to it. Norm weights are near 1 but not 1, so a
        # kernel that forgets them is visibly wrong.
        residual_scale = 1.0 / math.sqrt(2 * c.n_layers)
        normal(self.embed, 1.0)
        for block in self.layers:
            block.attn_norm.copy_(1.0 + 0.1 * torch.randn(c.dim, generator=generator))
            block.mlp_norm.copy_(1.0 + 0.1 * torch.randn(c.dim, generator=generator))
            for weight in (block.wq, block.wk, block.wv, block.w_gate, block.w_up):
                normal(weight, 1.0 / math.sqrt(c.dim))
            normal(block.wo, residual_scale / math.sqrt(c.n_heads * c.head_dim))
            normal(block.w_down, residual_scale / math.sqrt(c.mlp_hidden))
        self.final_norm.copy_(1.0 + 0.1 * torch.randn(c.dim, generator=generator))
        # Logits of a few units, so greedy choices are clear-cut rather than ties decided by rounding.
        normal(self.lm_head, 2.0 / math.sqrt(c.dim))

    @property
    def device(self) -> torch.device:
        return self.embed.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    def new_cache(self, batch: int, max_seq_len: int | None = None) -> KVCache:
        """An empty cache (all lengths 0) for ``batch`` sequences in the model's dtype and device."""
        c = self.config
        length = max_seq_len or c.max_seq_len
        shape = (c.n_layers, batch, c.n_kv_heads, length, c.head_dim)
        k = torch.zeros(shape, device=self.device, dtype=self.dtype)
        return KVCache(k=k, v=torch.zeros_like(k), lengths=torch.zeros(batch, dtype=torch.int64, device=self.device))

    # The pieces of a forward (_qkv, _attend, _output, _logits) are also what Act 6's batching engine
    # runs its packed steps with (autograder/problems/act6/slots.py): keep their shapes.
    def _qkv(self, block: Block, x: torch.Tensor, positions: torch.Tensor):
        """x [batch, seq, dim], positions [batch, seq] -> q [b, heads, seq, hd], k and v [b, kv_heads, seq, hd]."""
        c = self.config
        batch, seq, _ = x.shape
        h = rms_norm(x, block.attn_norm, c.norm_eps)
        q = F.linear(h, block.wq).view(batch, seq, c.n_heads, c.head_dim).transpose(1, 2)
        k = F.linear(h, block.wk).view(batch, seq, c.n_kv_heads, c.head_dim).transpose(1, 2)
        v = F.linear(h, block.wv).view(batch, seq, c.n_kv_heads, c.head_dim).transpose(1, 2)
        cos, sin = self.rope_cos[positions][:, None], self.rope_sin[positions][:, None]
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """q [b, heads, sq, hd]; k, v [b, kv_heads, sk, hd]; mask [b, sq, sk] (True = may attend).

        GQA without copying K/V: the query heads of a group are folded into the query-length axis, so
        each key/value head is read once for its whole group. Scores and softmax in float32 (float64 for a float64 model).
        """
        c = self.config
        batch, _, sq, hd = q.shape
        grouped = q.reshape(batch, c.n_kv_heads, c.group_size * sq, hd)
        wide = wide_dtype(q.dtype)
        scores = (grouped.to(wide) @ k.to(wide).transpose(-1, -2)) / math.sqrt(hd)
        scores = scores.view(batch, c.n_kv_heads, c.group_size, sq, -1)
        scores = scores.masked_fill(~mask[:, None, None], float("-inf"))
        probs = torch.softmax(scores, dim=-1).view(batch, c.n_kv_heads, c.group_size * sq, -1)
        out = (probs @ v.to(wide)).view(batch, c.n_heads, sq, hd)
        return out.to(q.dtype)

    def _output(self, block: Block, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        batch, _, seq, _ = attn.shape
        h = x + F.linear(attn.transpose(1, 2).reshape(batch, seq, -1), block.wo)
        return h + block.mlp(h, self.config.norm_eps)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(rms_norm(x, self.final_norm, self.config.norm_eps), self.lm_head).to(wide_dtype(x.dtype))

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Full causal forward without a cache: tokens [batch, seq] (int64) -> logits [batch, seq, vocab] (float32;
        float64 for a float64 model)."""
        batch, seq = tokens.shape
        positions = torch.arange(seq, device=self.device).expand(batch, seq)
        mask = torch.ones(seq, seq, dtype=torch.bool, device=self.device).tril().expand(batch, seq, seq)
        x = self.embed[tokens]
        for block in self.layers:
            q, k, v = self._qkv(block, x, positions)
            x = self._output(block, x, self._attend(q, k, v, mask))
        return self._logits(x)

    @torch.no_grad()
    def prefill(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Append ``tokens`` [batch, seq] to every sequence of ``cache`` and return their logits
        [batch, seq, vocab]. All sequences must have the same length before the call (0 for a fresh
        prompt; a later call continues it: chunked prefill)."""
        batch, seq = tokens.shape
        start = int(cache.lengths[0])
        if cache.batch != batch or bool((cache.lengths != start).any()):
            raise ValueError("prefill needs a cache of the same batch whose sequences all have the same length")
        if start + seq > cache.k.shape[3]:
            raise ValueError(f"prefill of {seq} tokens after {start} overflows the cache's {cache.k.shape[3]} positions")
        end = start + seq
        positions = torch.arange(start, end, device=self.device).expand(batch, seq)
        mask = torch.ones(seq, end, dtype=torch.bool, device=self.device).tril(diagonal=start).expand(batch, seq, end)
        x = self.embed[tokens]
        for layer, block in enumerate(self.layers):
            q, k, v = self._qkv(block, x, positions)
            cache.k[layer, :, :, start:end] = k
            cache.v[layer, :, :, start:end] = v
            x = self._output(block, x, self._attend(q, cache.k[layer, :, :, :end], cache.v[layer, :, :, :end], mask))
        cache.lengths += seq
        return self._logits(x)

    @torch.no_grad()
    def decode_step(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """One new token per sequence: tokens [batch] (int64) -> logits [batch, vocab] (float32).

        Sequence b's token goes at position ``cache.lengths[b]``, its key and value into the cache
        there, and it attends to positions 0..lengths[b]; then every length grows by one.
        """
        batch = tokens.shape[0]
        if cache.batch != batch:
            raise ValueError(f"decode_step got {batch} tokens for a cache of {cache.batch} sequences")
        lengths = cache.lengths
        if int(lengths.max()) >= cache.k.shape[3]:
            raise ValueError("decode_step: a sequence has filled its cache")
        span = int(lengths.max()) + 1
        rows = torch.arange(batch, device=self.device)
        mask = (torch.arange(span, device=self.device)[None, :] <= lengths[:, None])[:, None, :]
        x = self.embed[tokens][:, None, :]
        for layer, block in enumerate(self.layers):
            q, k, v = self._qkv(block, x, lengths[:, None])
            cache.k[layer, rows, :, lengths] = k[:, :, 0]
            cache.v[layer, rows, :, lengths] = v[:, :, 0]
            x = self._output(block, x, self._attend(q, cache.k[layer, :, :, :span], cache.v[layer, :, :, :span], mask))
        cache.lengths += 1
        return self._logits(x)[:, 0]


@torch.no_grad()
def greedy_generate(model: TinyTransformer, prompt: list[int] | torch.Tensor, max_new_tokens: int) -> list[int]:
    """Generate ``max_new_tokens`` tokens after ``prompt`` by argmax, one sequence on its own; returns the
    new tokens. This is the reference a serving engine's batched output must equal."""
    tokens = torch.as_tensor(prompt, dtype=torch.int64, device=model.device)[None]
    cache = model.new_cache(1, max_seq_len=tokens.shape[1] + max_new_tokens)
    logits = model.prefill(tokens, cache)[:, -1]
    generated = []
    for step in range(max_new_tokens):
        next_token = logits.argmax(dim=-1)
        generated.append(int(next_token))
        if step + 1 < max_new_tokens:
            logits = model.decode_step(next_token, cache)
    return generated
