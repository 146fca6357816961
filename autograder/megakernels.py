"""What Act 8's notebooks, demos and grader share: the inputs, the eager op-by-op decode layer and step
of the tiny transformer (autograder.tiny_transformer) at batch 1, with weights drawn at its scales,
their float64 references, a CUDA-graph version of the eager step, and the traffic of one call (the
profiler-trace helpers are in autograder.traces and importable from here).

A decode step at batch 1 reads every weight once and the cached keys and values once; it does two
FLOPs per weight it reads, so on any GPU it is bound by memory (or, op by op, by the bubbles between
its kernels). The layer's arguments, in call order:

    x [dim]                          the hidden state of the one new token
    attn_norm, mlp_norm [dim]        RMSNorm weights
    wq [n_heads * head_dim, dim], wk and wv [n_kv_heads * head_dim, dim], wo [dim, n_heads * head_dim]
    w_gate, w_up [mlp_hidden, dim], w_down [dim, mlp_hidden]
    k_cache, v_cache [n_kv_heads, cached, head_dim]   keys (after RoPE) and values of the earlier positions
    cos, sin [head_dim // 2]         the rotary angles of the new token's position (= cached)

The step takes the token instead of x, every layer's weights stacked on a leading layer axis, the
final norm and the output projection, and returns the logits [vocab]. Neither writes the cache: the
new token's key and value are attended to where they are computed, and are not returned.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .tiny_config import TinyConfig
from .tiny_numerics import apply_rope, rms_norm, rope_tables

# The profiler-trace helpers of exercise 8.1 and the demos, kept beside the decode step they profile.
from .traces import GPU_CATEGORIES, TICKS_PER_US, event, synthetic_trace, tick, trace_events  # noqa: F401

EPS = TinyConfig.norm_eps
LAYER_WEIGHTS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")


def layer_config(size: tuple) -> tuple[TinyConfig, int]:
    """A layer size is (dim, n_heads, n_kv_heads, head_dim, mlp_hidden, cached)."""
    dim, n_heads, n_kv_heads, head_dim, mlp_hidden, cached = size
    return TinyConfig(vocab_size=2, dim=dim, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim,
                         mlp_hidden=mlp_hidden, max_seq_len=cached + 1), cached


def step_config(size: tuple) -> tuple[TinyConfig, int]:
    """A step size is (vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, mlp_hidden, cached)."""
    vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, mlp_hidden, cached = size
    return TinyConfig(vocab_size=vocab, dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim,
                         mlp_hidden=mlp_hidden, max_seq_len=cached + 1), cached


def _weights(config: TinyConfig, n_layers: int, generator: torch.Generator, device: str) -> dict:
    """Every layer's weights stacked on a leading layer axis, drawn on the device with the scales of
    tiny_transformer's initialisation (variance-preserving projections, the two that write into the
    residual stream scaled down by sqrt(2 * n_layers), norm weights near 1 but not 1)."""
    c = config

    def normal(*shape, std=1.0):
        return std * torch.randn(n_layers, *shape, generator=generator, device=device)

    residual_scale = 1.0 / math.sqrt(2 * c.n_layers)
    q_dim, kv_dim = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    return {
        "attn_norm": 1.0 + normal(c.dim, std=0.1),
        "wq": normal(q_dim, c.dim, std=1.0 / math.sqrt(c.dim)),
        "wk": normal(kv_dim, c.dim, std=1.0 / math.sqrt(c.dim)),
        "wv": normal(kv_dim, c.dim, std=1.0 / math.sqrt(c.dim)),
        "wo": normal(c.dim, q_dim, std=residual_scale / math.sqrt(q_dim)),
        "mlp_norm": 1.0 + normal(c.dim, std=0.1),
        "w_gate": normal(c.mlp_hidden, c.dim, std=1.0 / math.sqrt(c.dim)),
        "w_up": normal(c.mlp_hidden, c.dim, std=1.0 / math.sqrt(c.dim)),
        "w_down": normal(c.dim, c.mlp_hidden, std=residual_scale / math.sqrt(c.mlp_hidden)),
    }


def _cache_and_angles(config: TinyConfig, cached: int, n_layers: int, generator: torch.Generator, device: str) -> dict:
    shape = (n_layers, config.n_kv_heads, cached, config.head_dim)
    # Keys of a few units give attention weights that are neither uniform nor one-hot.
    k_cache = 2.0 * torch.randn(shape, generator=generator, device=device)
    v_cache = torch.randn(shape, generator=generator, device=device)
    cos, sin = rope_tables(config, device)
    return {"k_cache": k_cache, "v_cache": v_cache, "cos": cos[cached].contiguous(), "sin": sin[cached].contiguous()}


def layer_inputs(size: tuple, seed: int, device: str) -> dict:
    config, cached = layer_config(size)
    generator = torch.Generator(device=device).manual_seed(seed)
    inputs = {"x": torch.randn(config.dim, generator=generator, device=device)}
    inputs.update({name: value[0] for name, value in _weights(config, 1, generator, device).items()})
    rest = _cache_and_angles(config, cached, 1, generator, device)
    inputs.update(k_cache=rest["k_cache"][0], v_cache=rest["v_cache"][0], cos=rest["cos"], sin=rest["sin"])
    return inputs


def step_inputs(size: tuple, seed: int, device: str) -> dict:
    config, cached = step_config(size)
    generator = torch.Generator(device=device).manual_seed(seed)
    token = torch.randint(config.vocab_size, (1,), generator=generator, device=device)
    inputs = {"token": token, "embed": torch.randn(config.vocab_size, config.dim, generator=generator, device=device)}
    inputs.update(_weights(config, config.n_layers, generator, device))
    inputs["final_norm"] = 1.0 + 0.1 * torch.randn(config.dim, generator=generator, device=device)
    inputs["lm_head"] = 2.0 / math.sqrt(config.dim) * torch.randn(config.vocab_size, config.dim, generator=generator, device=device)
    inputs.update(_cache_and_angles(config, cached, config.n_layers, generator, device))
    return inputs


# -- the eager layer and step -----------------------------------------------------------------------


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.float64:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight
    return rms_norm(x, weight, EPS)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.float64:
        first, second = x.chunk(2, dim=-1)
        return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return apply_rope(x, cos, sin)


def decode_layer_eager(x, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, k_cache, v_cache, cos, sin):
    """One layer of the tiny model for one new token, op by op as PyTorch runs it (a few dozen kernels).

    The new token attends to the cached positions and to itself; its key and value are used where
    they are computed rather than appended to a copy of the cache (which would move the whole cache).
    Works in the inputs' dtype: float32 is the library, float64 the reference.
    """
    n_kv, cached, head_dim = k_cache.shape
    n_heads = wq.shape[0] // head_dim
    group = n_heads // n_kv
    h = _rms_norm(x, attn_norm)
    q = _rope(F.linear(h, wq).view(n_kv, group, head_dim), cos, sin)
    k = _rope(F.linear(h, wk).view(n_kv, 1, head_dim), cos, sin)
    v = F.linear(h, wv).view(n_kv, 1, head_dim)
    scale = 1.0 / math.sqrt(head_dim)
    scores = torch.cat([q @ k_cache.transpose(1, 2), q @ k.transpose(1, 2)], dim=-1) * scale
    probs = torch.softmax(scores, dim=-1)
    attn = probs[..., :cached] @ v_cache + probs[..., cached:] * v
    h = x + F.linear(attn.reshape(-1), wo)
    m = _rms_norm(h, mlp_norm)
    return h + F.linear(F.silu(F.linear(m, w_gate)) * F.linear(m, w_up), w_down)


def decode_layer_reference(**inputs) -> torch.Tensor:
    return decode_layer_eager(**{name: value.double() for name, value in inputs.items()})


def decode_step_eager(token, embed, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, final_norm, lm_head, k_cache, v_cache, cos, sin):
    """The whole decode step at batch 1, op by op: the token's embedding, every layer, the final norm
    and the logits [vocab] (float32)."""
    x = embed.index_select(0, token)[0]  # a gather kernel: indexing by a tensor's value would wait for the GPU
    for layer in range(wq.shape[0]):
        x = decode_layer_eager(x, attn_norm[layer], wq[layer], wk[layer], wv[layer], wo[layer], mlp_norm[layer], w_gate[layer], w_up[layer],
                               w_down[layer], k_cache[layer], v_cache[layer], cos, sin)
    return F.linear(_rms_norm(x, final_norm), lm_head).float()


def decode_step_reference(**inputs) -> torch.Tensor:
    return decode_step_eager(**{name: value if name == "token" else value.double() for name, value in inputs.items()})


_GRAPHS: dict = {}


def decode_step_graphed(**inputs) -> torch.Tensor:
    """The eager step captured once as a CUDA graph per set of input buffers and replayed: the launch
    cost of every kernel is gone, the bubbles between dependent kernels are not. The grader refills
    the same buffers with fresh values between calls, so a replay computes on the new values."""
    key = tuple((name, value.data_ptr(), tuple(value.shape)) for name, value in inputs.items())
    entry = _GRAPHS.get(key)
    if entry is None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            decode_step_eager(**inputs)  # warm-up outside the capture (allocator, lazy initialisation)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = decode_step_eager(**inputs)
        entry = _GRAPHS[key] = (graph, out)
    graph, out = entry
    graph.replay()
    return out


# -- traffic and arithmetic ---------------------------------------------------------------------------


def _layer_weights(config: TinyConfig) -> int:
    c = config
    return c.dim * c.head_dim * (2 * c.n_heads + 2 * c.n_kv_heads) + 3 * c.dim * c.mlp_hidden + 2 * c.dim


def _attention_flops(config: TinyConfig, cached: int) -> int:
    # Scores and the weighted sum of values: 2 * head_dim FLOPs each per query head per position.
    return 4 * config.n_heads * config.head_dim * (cached + 1)


def layer_bytes(size: tuple) -> float:
    config, cached = layer_config(size)
    cache = 2 * config.n_kv_heads * cached * config.head_dim
    return 4.0 * (_layer_weights(config) + cache + 2 * config.head_dim // 2 + 2 * config.dim)  # reads x, writes the output


def layer_flops(size: tuple) -> float:
    config, cached = layer_config(size)
    return 2.0 * _layer_weights(config) + _attention_flops(config, cached)


def step_bytes(size: tuple) -> float:
    config, cached = step_config(size)
    per_layer = _layer_weights(config) + 2 * config.n_kv_heads * cached * config.head_dim
    # Every layer's weights and cache, one row of the embedding, the final norm, the output
    # projection, and the logits written.
    return 4.0 * (config.n_layers * per_layer + config.dim + config.dim + config.vocab_size * config.dim + config.vocab_size)


def step_flops(size: tuple) -> float:
    config, cached = step_config(size)
    return config.n_layers * (2.0 * _layer_weights(config) + _attention_flops(config, cached)) + 2.0 * config.vocab_size * config.dim


def describe_layer(size: tuple) -> str:
    dim, n_heads, n_kv_heads, head_dim, mlp_hidden, cached = size
    return f"dim {dim}, {n_heads}/{n_kv_heads} heads of {head_dim}, MLP {mlp_hidden}, {cached} cached"


def describe_step(size: tuple) -> str:
    vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, mlp_hidden, cached = size
    return f"{n_layers} layers, dim {dim}, {n_heads}/{n_kv_heads} heads of {head_dim}, MLP {mlp_hidden}, vocab {vocab}, {cached} cached"


# The eager step of exercise 8.3 at its benchmark size.
PROFILED_STEP = (8192, 1024, 4, 16, 4, 64, 2816, 255)


def profile_decode_step(size: tuple = PROFILED_STEP, seed: int = 0) -> list:
    """The events of one eager decode step of the tiny model on this GPU (needs CUDA)."""
    inputs = step_inputs(size, seed, "cuda")
    return trace_events(lambda: decode_step_eager(**inputs))


