"""Act 6, exercise 1: serving arithmetic with exact answers. How many tokens a GPU's KV cache holds
(GQA and MQA shrink it), how many requests fit, how fast a decode step can be, how much memory
static reservation wastes that paging does not, and what speculative decoding buys. Graded on any
machine, with fixed cases (real model shapes, edge cases) first and random ones drawn from the seed."""

from __future__ import annotations

import random

# Model shapes in the form a config file gives them: layers, query heads, KV heads, head dim and the
# parameter count. Llama-2-7B is multi-head (32 KV heads), Llama-3-8B and -70B use GQA with 8 KV
# heads, Falcon-7B is multi-query (one KV head).
MODELS = {
    "llama2-7b": dict(layers=32, q_heads=32, kv_heads=32, head_dim=128, params=6.74e9),
    "llama3-8b": dict(layers=32, q_heads=32, kv_heads=8, head_dim=128, params=8.03e9),
    "llama3-70b": dict(layers=80, q_heads=64, kv_heads=8, head_dim=128, params=70.6e9),
    "falcon-7b": dict(layers=32, q_heads=71, kv_heads=1, head_dim=64, params=7.2e9),
}


def kv_capacity(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int, memory_bytes: int, weight_bytes: int, utilization: float,
                block_size: int, seq_len: int) -> dict:
    """What a serving engine's KV cache holds on one GPU.

    bytes_per_token: a key and a value vector per layer and KV head (query heads do not count).
    blocks: the whole blocks of block_size tokens that fit in utilization * memory_bytes once the
        weights are loaded (0 when they do not fit).
    tokens: the tokens those blocks hold.
    max_batch: how many sequences of seq_len tokens fit, each rounded up to whole blocks.
    """
    bytes_per_token = 2 * layers * kv_heads * head_dim * dtype_bytes
    budget = int(utilization * memory_bytes) - weight_bytes
    blocks = max(0, budget // (bytes_per_token * block_size))
    blocks_per_sequence = -(-seq_len // block_size)
    return {"bytes_per_token": bytes_per_token, "blocks": blocks, "tokens": blocks * block_size, "max_batch": blocks // blocks_per_sequence}


def decode_step_time(params: float, weight_bytes_per_param: float, kv_bytes_per_token: float, context_lens: list, bandwidth: float,
                     peak_flops: float) -> dict:
    """The least time one decode step of a batch can take, one new token for each sequence of
    context_lens (the tokens already in its cache).

    The step reads every weight once and every sequence's whole KV cache once (memory_seconds), and
    does 2 FLOPs per parameter per sequence (compute_seconds; attention's FLOPs are left out). Its
    time is the larger of the two, "bound" says which ("memory" on a tie), and tokens_per_s is the
    batch's new tokens over that time.
    """
    batch = len(context_lens)
    memory_seconds = (params * weight_bytes_per_param + kv_bytes_per_token * sum(context_lens)) / bandwidth
    compute_seconds = 2.0 * params * batch / peak_flops
    seconds = max(memory_seconds, compute_seconds)
    return {
        "memory_seconds": memory_seconds,
        "compute_seconds": compute_seconds,
        "seconds": seconds,
        "tokens_per_s": batch / seconds,
        "bound": "compute" if compute_seconds > memory_seconds else "memory",
    }


def reservation_waste(prompt_lens: list, output_lens: list, max_seq_len: int, block_size: int) -> dict:
    """KV slots (token positions) that a batch of requests uses and reserves at its largest.

    used: every request's prompt plus all its output tokens.
    static: an engine that reserves max_seq_len slots per request up front.
    paged: one that allocates blocks of block_size as tokens arrive (each request's last block is
        partly empty at most).
    static_waste and paged_waste: the fraction of the reserved slots that hold no token.
    """
    used = sum(p + o for p, o in zip(prompt_lens, output_lens, strict=True))
    static = max_seq_len * len(prompt_lens)
    paged = sum(-(-(p + o) // block_size) * block_size for p, o in zip(prompt_lens, output_lens, strict=True))
    return {"used": used, "static": static, "paged": paged, "static_waste": 1.0 - used / static, "paged_waste": 1.0 - used / paged}


def speculative_speedup(acceptance: float, draft_tokens: int, draft_cost: float) -> dict:
    """Speculative decoding with a draft model: it proposes draft_tokens tokens, the target model checks
    them all in one forward pass, and each is accepted independently with probability acceptance,
    the first rejection ending the run (the target then adds one token of its own).

    tokens_per_pass: the expected tokens one verification pass yields, (1 - a^(k+1)) / (1 - a)
        for a < 1, k + 1 for a = 1.
    cost_per_pass: in units of one target forward, k * draft_cost for the drafts plus 1.
    speedup: tokens_per_pass / cost_per_pass, against plain decoding's one token per forward.
    """
    a, k = acceptance, draft_tokens
    tokens = float(k + 1) if a == 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)
    cost = k * draft_cost + 1.0
    return {"tokens_per_pass": tokens, "cost_per_pass": cost, "speedup": tokens / cost}


def capacity_cases(seed: int) -> list:
    r = random.Random(seed)
    cases = []
    for name, memory, weight_bytes_per_param in (("llama2-7b", 80 * 10**9, 2), ("llama3-8b", 80 * 10**9, 2), ("llama3-70b", 80 * 10**9, 2), ("falcon-7b", 16 * 10**9, 1)):
        m = MODELS[name]
        cases.append(dict(layers=m["layers"], kv_heads=m["kv_heads"], head_dim=m["head_dim"], dtype_bytes=2, memory_bytes=memory,
                          weight_bytes=int(m["params"] * weight_bytes_per_param), utilization=0.9, block_size=16, seq_len=4096))
    # One token per block, a sequence of one token: the rounding has nowhere to hide.
    cases.append(dict(layers=1, kv_heads=1, head_dim=1, dtype_bytes=1, memory_bytes=1000, weight_bytes=0, utilization=1.0, block_size=1, seq_len=1))
    for _ in range(6):
        kv_heads = r.choice((1, 2, 4, 8, 16, 32))
        cases.append(dict(layers=r.randrange(1, 97), kv_heads=kv_heads, head_dim=r.choice((64, 80, 96, 128, 256)), dtype_bytes=r.choice((1, 2, 4)),
                          memory_bytes=r.choice((16, 24, 40, 80, 141, 192)) * 10**9, weight_bytes=r.randrange(0, 60 * 10**9),
                          utilization=round(r.uniform(0.5, 0.95), 2), block_size=r.choice((1, 8, 16, 32, 128)), seq_len=r.randrange(1, 32769)))
    return cases


def decode_cases(seed: int) -> list:
    r = random.Random(seed)
    m = MODELS["llama3-8b"]
    kv = 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * 2
    cases = [
        # Batch 1 at H100-like rates: memory-bound by far.
        dict(params=m["params"], weight_bytes_per_param=2, kv_bytes_per_token=kv, context_lens=[1000], bandwidth=3.35e12, peak_flops=989e12),
        # 512 short sequences: the weights are shared, the FLOPs are not; compute-bound.
        dict(params=m["params"], weight_bytes_per_param=2, kv_bytes_per_token=kv, context_lens=[16] * 512, bandwidth=3.35e12, peak_flops=989e12),
        # 64 long sequences: the KV cache, not the weights, is most of the bytes.
        dict(params=m["params"], weight_bytes_per_param=2, kv_bytes_per_token=kv, context_lens=[8192] * 64, bandwidth=3.35e12, peak_flops=989e12),
        # An exact tie: memory on a tie.
        dict(params=1.0, weight_bytes_per_param=1.0, kv_bytes_per_token=0.0, context_lens=[5], bandwidth=1.0, peak_flops=2.0),
    ]
    for _ in range(6):
        cases.append(dict(params=r.uniform(1e8, 1e11), weight_bytes_per_param=r.choice((0.5, 1, 2, 4)), kv_bytes_per_token=r.uniform(1e3, 1e6),
                          context_lens=[r.randrange(0, 20000) for _ in range(r.randrange(1, 300))], bandwidth=r.uniform(3e11, 8e12), peak_flops=r.uniform(6e13, 2.5e15)))
    return cases


def waste_cases(seed: int) -> list:
    r = random.Random(seed)
    cases = [
        dict(prompt_lens=[1], output_lens=[0], max_seq_len=1, block_size=1),
        dict(prompt_lens=[100, 7, 2000], output_lens=[28, 1, 48], max_seq_len=2048, block_size=16),
        dict(prompt_lens=[15, 16, 17], output_lens=[0, 0, 0], max_seq_len=4096, block_size=16),
    ]
    for _ in range(6):
        max_seq_len = r.choice((512, 2048, 4096, 8192))
        n = r.randrange(1, 64)
        prompts = [r.randrange(1, max_seq_len // 2) for _ in range(n)]
        outputs = [r.randrange(0, max_seq_len - p) for p in prompts]
        cases.append(dict(prompt_lens=prompts, output_lens=outputs, max_seq_len=max_seq_len, block_size=r.choice((1, 8, 16, 32))))
    return cases


def speculative_cases(seed: int) -> list:
    r = random.Random(seed)
    cases = [
        dict(acceptance=0.8, draft_tokens=4, draft_cost=0.05),
        dict(acceptance=0.0, draft_tokens=4, draft_cost=0.1),  # every draft rejected: slower than plain decoding
        dict(acceptance=1.0, draft_tokens=7, draft_cost=0.0),  # every draft accepted, free drafts: k + 1 tokens a pass
        dict(acceptance=0.6, draft_tokens=0, draft_cost=0.3),  # no drafts: plain decoding
    ]
    return cases + [dict(acceptance=round(r.uniform(0.05, 0.98), 3), draft_tokens=r.randrange(1, 13), draft_cost=round(r.uniform(0.0, 0.5), 3)) for _ in range(6)]
