# expect: FAIL
# devices: cpu cuda
# Query head h grouped with KV head h % kv_heads instead of h // (heads // kv_heads): right for MHA and MQA only.
import torch
import triton
import triton.language as tl


@triton.jit
def paged_attention_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, partial_acc_ptr, partial_max_ptr, partial_sum_ptr,
                           stride_q_seq, stride_q_head, stride_k_block, stride_k_slot, stride_k_head, stride_table, max_splits, scale,
                           GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                           TILE: tl.constexpr, PARTITION: tl.constexpr):
    """Program (seq, kv_head, split) attends the GROUP query heads of kv_head to tokens
    [split * PARTITION, (split + 1) * PARTITION) of sequence seq, and writes its partial result:
    the unnormalised sum of p * v, the running max and the sum of p, per query head."""
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + seq)
    start = split * PARTITION
    end = tl.minimum(start + PARTITION, seq_len)
    rows = tl.arange(0, GROUP_PAD)
    # Query head h read with KV head h % kv_heads (interleaved) instead of h // GROUP (consecutive).
    heads = kv_head + rows * tl.num_programs(1)
    dims = tl.arange(0, HEAD_DIM)
    # The whole group of query heads in one program: every K/V byte of this KV head is read once, not
    # once per query head (what makes GQA cheap at decode). Rows past GROUP are padding for tl.dot.
    q = tl.load(q_ptr + seq * stride_q_seq + heads[:, None] * stride_q_head + dims[None, :], mask=(rows < GROUP)[:, None], other=0.0)
    running_max = tl.full([GROUP_PAD], float("-inf"), dtype=tl.float32)
    running_sum = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    for tile_start in range(start, end, TILE):
        tokens = tile_start + tl.arange(0, TILE)
        valid = tokens < end
        # The gather: each token's physical block from the table (masked: entries past the
        # sequence's blocks are -1), then its slot in that block.
        blocks = tl.load(block_tables_ptr + seq * stride_table + tokens // BLOCK_SIZE, mask=valid, other=0)
        rows_of_cache = blocks.to(tl.int64) * stride_k_block + (tokens % BLOCK_SIZE) * stride_k_slot + kv_head * stride_k_head
        k = tl.load(k_cache_ptr + rows_of_cache[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        scores = tl.where(valid[None, :], scores, float("-inf"))
        new_max = tl.maximum(running_max, tl.max(scores, axis=1))
        # Online softmax: rescale what was summed under the old max.
        correction = tl.exp(running_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        running_sum = running_sum * correction + tl.sum(p, axis=1)
        v = tl.load(v_cache_ptr + rows_of_cache[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        running_max = new_max
    out_rows = (seq * tl.num_programs(1) * GROUP + heads) * max_splits + split
    head_mask = rows < GROUP
    tl.store(partial_acc_ptr + out_rows[:, None] * HEAD_DIM + dims[None, :], acc, mask=head_mask[:, None])
    tl.store(partial_max_ptr + out_rows, running_max, mask=head_mask)
    tl.store(partial_sum_ptr + out_rows, running_sum, mask=head_mask)


@triton.jit
def combine_kernel(partial_acc_ptr, partial_max_ptr, partial_sum_ptr, seq_lens_ptr, out_ptr, heads, max_splits,
                   HEAD_DIM: tl.constexpr, SPLITS_PAD: tl.constexpr, PARTITION: tl.constexpr):
    """Program (seq, head) merges the partial results of the sequence's splits into its output row."""
    seq = tl.program_id(0)
    head = tl.program_id(1)
    splits = tl.arange(0, SPLITS_PAD)
    used = splits < tl.cdiv(tl.load(seq_lens_ptr + seq), PARTITION)
    row = (seq * heads + head) * max_splits
    maxes = tl.load(partial_max_ptr + row + splits, mask=used, other=float("-inf"))
    sums = tl.load(partial_sum_ptr + row + splits, mask=used, other=0.0)
    dims = tl.arange(0, HEAD_DIM)
    accs = tl.load(partial_acc_ptr + (row + splits)[:, None] * HEAD_DIM + dims[None, :], mask=used[:, None], other=0.0)
    # Each split summed exp(s - its own max): bring them all to the global max before adding.
    weights = tl.where(used, tl.exp(maxes - tl.max(maxes, axis=0)), 0.0)
    out = tl.sum(accs * weights[:, None], axis=0) / tl.sum(sums * weights, axis=0)
    tl.store(out_ptr + (seq * heads + head) * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


def paged_attention(q, k_cache, v_cache, block_tables, seq_lens):
    """One decode step of attention over a paged KV cache.

    q: [batch, heads, head_dim] float16, one query token per sequence.
    k_cache, v_cache: [num_blocks, block_size, kv_heads, head_dim] float16; heads is a multiple of kv_heads.
    block_tables: [batch, max_blocks] int32; sequence b's token i is in block block_tables[b, i // block_size],
        slot i % block_size; entries past its blocks are -1.
    seq_lens: [batch] int32, each >= 1.
    Returns a new [batch, heads, head_dim] float16 tensor: softmax(q k^T / sqrt(head_dim)) v per sequence and
    head, over that sequence's tokens only. Traffic: reads each sequence's keys and values once.
    """
    batch, heads, head_dim = q.shape
    _, block_size, kv_heads, _ = k_cache.shape
    group = heads // kv_heads
    # Split each sequence into partitions of 512 tokens (flash-decoding): a batch of a few long
    # sequences still gives the GPU thousands of programs to stream the cache with.
    partition = 512
    max_splits = triton.cdiv(block_tables.shape[1] * block_size, partition)
    partial_acc = torch.empty(batch, heads, max_splits, head_dim, device=q.device, dtype=torch.float32)
    partial_max = torch.empty(batch, heads, max_splits, device=q.device, dtype=torch.float32)
    partial_sum = torch.empty(batch, heads, max_splits, device=q.device, dtype=torch.float32)
    paged_attention_kernel[(batch, kv_heads, max_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, partial_acc, partial_max, partial_sum,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0), max_splits,
        1.0 / head_dim**0.5, GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim, BLOCK_SIZE=block_size,
        TILE=64, PARTITION=partition, num_warps=4)
    out = torch.empty_like(q)
    combine_kernel[(batch, heads)](partial_acc, partial_max, partial_sum, seq_lens, out, heads, max_splits,
                                   HEAD_DIM=head_dim, SPLITS_PAD=triton.next_power_of_2(max_splits), PARTITION=partition)
    return out
