"""One decode step of attention over a paged KV cache (PagedAttention, vLLM's layout).

Sequence b's token i has its key and value in physical block ``block_tables[b, i // block_size]`` at
slot ``i % block_size`` of ``k_cache`` and ``v_cache`` ([num_blocks, block_size, kv_heads, head_dim]);
its query ``q[b]`` ([heads, head_dim]) attends to its ``seq_lens[b]`` tokens, query head h reading KV
head ``h // (heads // kv_heads)``. Blocks are scattered through a cache larger than the sequences
need, the rest of the cache (and every slot past a sequence's length) holds other data, and unused
table entries are -1, so a kernel that reads outside a sequence's tokens is wrong or out of bounds.
"""

from __future__ import annotations

import math

import torch


def sequence_lengths(size: tuple) -> list[int]:
    """The lengths of a size's sequences, from the longest down to about longest / batch: fixed by the
    size (so the bytes that must move are too), shuffled among the sequences per seed."""
    batch, _, _, _, _, longest = size
    return [1 + (longest - 1) * (batch - i) // batch for i in range(batch)]


def make_inputs(size: tuple, seed: int, device: str) -> dict:
    batch, heads, kv_heads, head_dim, block_size, _ = size
    generator = torch.Generator(device=device).manual_seed(seed)
    lengths = torch.tensor(sequence_lengths(size), dtype=torch.int32, device=device)
    lengths = lengths[torch.randperm(batch, generator=generator, device=device)]
    blocks_needed = (lengths + block_size - 1) // block_size
    used = int(blocks_needed.sum())
    # An eighth more blocks than the sequences use, in random order: tables point all over the cache.
    num_blocks = used + used // 8 + 1
    order = torch.randperm(num_blocks, generator=generator, device=device)[:used].to(torch.int32)
    block_tables = torch.full((batch, int(blocks_needed.max())), -1, dtype=torch.int32, device=device)
    starts = torch.cumsum(blocks_needed, 0) - blocks_needed
    for b in range(batch):
        n = int(blocks_needed[b])
        block_tables[b, :n] = order[int(starts[b]) : int(starts[b]) + n]

    def normal(*shape) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(torch.float16)

    return {
        "q": normal(batch, heads, head_dim),
        "k_cache": normal(num_blocks, block_size, kv_heads, head_dim),
        "v_cache": normal(num_blocks, block_size, kv_heads, head_dim),
        "block_tables": block_tables,
        "seq_lens": lengths,
    }


def _gathered(cache: torch.Tensor, table_row: torch.Tensor, length: int) -> torch.Tensor:
    """A sequence's [length, kv_heads, head_dim] keys or values, gathered through its table row."""
    blocks = table_row[: -(-length // cache.shape[1])].long()
    return cache[blocks].reshape(-1, cache.shape[2], cache.shape[3])[:length]


def reference(q, k_cache, v_cache, block_tables, seq_lens) -> torch.Tensor:
    """In float64, one sequence at a time."""
    batch, heads, head_dim = q.shape
    kv_heads = k_cache.shape[2]
    out = torch.empty(batch, heads, head_dim, dtype=torch.float64, device=q.device)
    for b in range(batch):
        length = int(seq_lens[b])
        k = _gathered(k_cache, block_tables[b], length).double().transpose(0, 1)  # [kv_heads, length, d]
        v = _gathered(v_cache, block_tables[b], length).double().transpose(0, 1)
        query = q[b].double().view(kv_heads, heads // kv_heads, head_dim)
        scores = query @ k.transpose(1, 2) / math.sqrt(head_dim)
        out[b] = (torch.softmax(scores, dim=-1) @ v).reshape(heads, head_dim)
    return out


def library(q, k_cache, v_cache, block_tables, seq_lens) -> torch.Tensor:
    """What an engine without a paged kernel does: gather every sequence's keys and values into a
    contiguous, padded copy (a second pass over the cache), then PyTorch's SDPA with a length mask."""
    batch, heads, head_dim = q.shape
    block_size = k_cache.shape[1]
    longest = block_tables.shape[1] * block_size
    tables = block_tables.long().clamp(min=0)
    k = k_cache[tables].reshape(batch, longest, k_cache.shape[2], head_dim).transpose(1, 2)
    v = v_cache[tables].reshape(batch, longest, v_cache.shape[2], head_dim).transpose(1, 2)
    mask = (torch.arange(longest, device=q.device)[None, :] < seq_lens[:, None].long())[:, None, None, :]
    out = torch.nn.functional.scaled_dot_product_attention(q[:, :, None, :], k, v, attn_mask=mask, enable_gqa=True)
    return out[:, :, 0, :]


def bytes_moved(size: tuple) -> float:
    batch, heads, kv_heads, head_dim, block_size, _ = size
    lengths = sequence_lengths(size)
    # Reads every sequence's keys and values once (fp16), its query and its table entries; writes the output.
    kv = 2 * sum(lengths) * kv_heads * head_dim * 2
    tables = 4 * sum(-(-n // block_size) for n in lengths) + 4 * batch
    return float(kv + tables + 2 * (2 * batch * heads * head_dim))


def flops(size: tuple) -> float:
    _, heads, _, head_dim, _, _ = size
    # q k^T and p v: 2 * head_dim FLOPs each per (query head, token).
    return 4.0 * sum(sequence_lengths(size)) * heads * head_dim


def describe_size(size: tuple) -> str:
    batch, heads, kv_heads, head_dim, block_size, longest = size
    return f"B={batch} H={heads}/{kv_heads} D={head_dim} block={block_size} len<={longest}"
