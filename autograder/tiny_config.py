"""The shapes of the tiny transformer (autograder.tiny_transformer): its config, ``TINY`` for CPU tests
and ``BENCH`` for GPU timing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TinyConfig:
    """The shape of the model. ``n_heads`` must be a multiple of ``n_kv_heads`` (GQA: each group of
    ``n_heads // n_kv_heads`` query heads shares one key/value head; MQA is ``n_kv_heads = 1``)."""

    vocab_size: int = 256
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 16
    mlp_hidden: int = 160
    max_seq_len: int = 256
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self):
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        if self.head_dim % 2:
            raise ValueError(f"head_dim ({self.head_dim}) must be even for rotary embeddings")

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads

    def kv_bytes_per_token(self, bytes_per_element: int) -> int:
        """KV-cache bytes one token occupies: a key and a value vector per KV head per layer."""
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim * bytes_per_element

    def parameter_count(self) -> int:
        attention = self.dim * self.head_dim * (2 * self.n_heads + 2 * self.n_kv_heads)
        mlp = 3 * self.dim * self.mlp_hidden
        per_layer = attention + mlp + 2 * self.dim
        return 2 * self.vocab_size * self.dim + self.n_layers * per_layer + self.dim


# For tests and CPU demos: a forward pass takes milliseconds on a CPU.
TINY = TinyConfig()
# For GPU timing: 8 layers of a 2048-wide model, 16 query heads sharing 4 KV heads of 128 (GQA groups of 4), about
# 0.49 B parameters. A decode step reads every weight once, ~1 GB in bf16, so at small batch it is
# bound by memory bandwidth, not by the tensor cores.
BENCH = TinyConfig(vocab_size=32000, dim=2048, n_layers=8, n_heads=16, n_kv_heads=4, head_dim=128,
                   mlp_hidden=5632, max_seq_len=4096)
