"""Exercise 5.5: a 3-D parallel plan for a large model's training run, by a stated cost model.

``plan_cost`` is the model: a plan of tensor (t), pipeline (p) and data (d) parallelism, a ZeRO
stage and a micro-batch size, for a model and a cluster, gives the bytes each GPU holds, the pipeline
bubble and the predicted step time. ``best_plan`` searches every valid plan for the fastest one
that fits. The model follows the chapter (book/act5-multi-gpu/parallelism.md): mixed-precision Adam's
16 bytes per parameter and ZeRO's sharding of them (Rajbhandari et al., 2020), activation bytes per
layer with tensor parallelism and no recomputation (Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models", 2022: s b h (10 + 24/t + 5 a s / (h t)), less its
attention-score term, which FlashAttention never stores: s b h (10 + 24/t)), the 1F1B
schedule's bubble (p - 1) / (m + p - 1) and its first stage holding min(p, m) micro-batches, 6 FLOPs
per parameter and token at a stated model-FLOPs utilisation, and the alpha-beta ring of Exercise 5.2
for every collective, none of it overlapped.
"""

from __future__ import annotations

import itertools
import random

# Mixed-precision Adam, per parameter: bf16 weight and gradient, fp32 master weight, momentum, variance.
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 12
ACTIVATION_BYTES = 2  # bf16 activations cross the links
ZERO_STAGES = (0, 1, 2, 3)
PLAN_KEYS = ("tp", "pp", "dp", "zero", "micro_batch")
# A plan whose predicted step is within this share of the best plan's is as good as the best.
STEP_TOLERANCE = 0.01


def ring_seconds(size_bytes: float, ranks: int, link: list) -> float:
    """Exercise 5.2's ring all-reduce, 2 (r - 1) (alpha + S / (r B)); nothing to do on one rank."""
    alpha, bandwidth = link
    return 0.0 if ranks == 1 else 2 * (ranks - 1) * (alpha + size_bytes / (ranks * bandwidth))


def link_for(span: int, cluster: dict) -> list:
    """Ranks are numbered tensor-parallel innermost, then data, then pipeline: a group whose ranks
    span at most one node's GPUs talks over NVLink, any other over the network."""
    return cluster["nvlink"] if span <= cluster["gpus_per_node"] else cluster["network"]


def plan_cost(model: dict, cluster: dict, plan: dict) -> dict:
    """{"memory_bytes", "bubble", "step_s", "fits"} of a valid plan (see the notebook for every term)."""
    t, p, d, zero, b = (plan[key] for key in PLAN_KEYS)
    params, layers, hidden = model["params"], model["layers"], model["hidden"]
    seq, batch = model["seq_len"], model["global_batch"]
    per_gpu = params / (t * p)
    states = per_gpu * (
        WEIGHT_BYTES * (1 / d if zero >= 3 else 1) + GRAD_BYTES * (1 / d if zero >= 2 else 1) + OPTIMIZER_BYTES * (1 / d if zero >= 1 else 1)
    )
    micro_batches = batch // (d * b)
    # FlashAttention keeps no s x s scores: what a layer stores is the rest of Korthikanti et al.'s sum.
    per_layer = seq * b * hidden * (10 + 24 / t)
    activations = min(p, micro_batches) * (layers // p) * per_layer
    memory = states + activations
    bubble = (p - 1) / (micro_batches + p - 1)
    compute = 6 * params * batch * seq / (cluster["gpus"] * cluster["flops"] * cluster["mfu"])
    pipeline = compute * (micro_batches + p - 1) / micro_batches
    message = ACTIVATION_BYTES * seq * b * hidden
    tensor_comm = micro_batches * (layers // p) * 4 * ring_seconds(message, t, link_for(t, cluster))
    alpha, bandwidth = link_for(t * d * p, cluster)
    pipeline_comm = 2 * (micro_batches + p - 1) * (alpha + message / bandwidth) if p > 1 else 0.0
    data_comm = ring_seconds(GRAD_BYTES * per_gpu, d, link_for(t * d, cluster)) * (1.5 if zero == 3 else 1.0)
    return {
        "memory_bytes": memory,
        "bubble": bubble,
        "step_s": pipeline + tensor_comm + pipeline_comm + data_comm,
        "fits": memory <= cluster["memory_bytes"],
    }


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def valid_plans(model: dict, cluster: dict):
    """Every plan the cluster can run: t p d = GPUs; t divides a node's GPUs and the heads; p divides
    the layers; d b divides the global batch; any ZeRO stage."""
    gpus = cluster["gpus"]
    for t in _divisors(cluster["gpus_per_node"]):
        if model["heads"] % t or gpus % t:
            continue
        for p in _divisors(model["layers"]):
            if (gpus // t) % p:
                continue
            d = gpus // (t * p)
            if model["global_batch"] % d:
                continue
            for b, zero in itertools.product(_divisors(model["global_batch"] // d), ZERO_STAGES):
                yield {"tp": t, "pp": p, "dp": d, "zero": zero, "micro_batch": b}


def best_plan(model: dict, cluster: dict) -> dict:
    """The valid plan that fits in memory with the smallest predicted step (the first found on a tie,
    in the order of valid_plans)."""
    best, best_step = None, float("inf")
    for plan in valid_plans(model, cluster):
        cost = plan_cost(model, cluster, plan)
        if cost["fits"] and cost["step_s"] < best_step:
            best, best_step = plan, cost["step_s"]
    if best is None:
        raise ValueError("no valid plan fits")
    return best


def plan_problem(got, model: dict, cluster: dict) -> str | None:
    """What makes ``got`` not a plan this cluster can run, or None."""
    if not isinstance(got, dict) or set(got) != set(PLAN_KEYS):
        return f"return a dict with exactly the keys {', '.join(PLAN_KEYS)}"
    if not all(isinstance(got[key], int) and not isinstance(got[key], bool) and got[key] >= (0 if key == "zero" else 1) for key in PLAN_KEYS):
        return f"every value must be a positive int (zero may be 0): {got}"
    t, p, d, zero, b = (got[key] for key in PLAN_KEYS)
    checks = [
        (t * p * d == cluster["gpus"], f"tp * pp * dp = {t * p * d}, the cluster has {cluster['gpus']} GPUs"),
        (cluster["gpus_per_node"] % t == 0, f"tp = {t} must divide a node's {cluster['gpus_per_node']} GPUs"),
        (model["heads"] % t == 0, f"tp = {t} must divide the {model['heads']} heads"),
        (model["layers"] % p == 0, f"pp = {p} must divide the {model['layers']} layers"),
        (model["global_batch"] % (d * b) == 0, f"dp * micro_batch = {d * b} must divide the global batch of {model['global_batch']}"),
        (zero in ZERO_STAGES, f"zero must be one of {ZERO_STAGES}"),
    ]
    return next((message for ok, message in checks if not ok), None)


def judge_plan(got, expected: dict, case: dict) -> str | None:
    """Right when ``got`` is a valid plan that fits and whose predicted step is within
    STEP_TOLERANCE of the best plan's (several plans can be equally good)."""
    model, cluster = case["model"], case["cluster"]
    problem = plan_problem(got, model, cluster)
    if problem:
        return problem
    mine, best = plan_cost(model, cluster, got), plan_cost(model, cluster, expected)
    if not mine["fits"]:
        return f"{got} needs {mine['memory_bytes'] / 1e9:,.1f} GB per GPU, the GPUs have {cluster['memory_bytes'] / 1e9:,.0f} GB"
    if mine["step_s"] > best["step_s"] * (1 + STEP_TOLERANCE):
        return f"{got} takes {mine['step_s']:.3f} s per step by the model; {expected} takes {best['step_s']:.3f} s"
    return None


# Round figures of the kinds the chapter uses: an H100-class GPU (bf16 dense 989 TFLOP/s, 80 GB),
# NVLink inside a node of 8, one 400 Gb/s port per GPU across nodes.
H100_CLUSTER = {"gpus_per_node": 8, "memory_bytes": 80e9, "flops": 989e12, "mfu": 0.4, "nvlink": [3e-6, 450e9], "network": [10e-6, 50e9]}
MODELS = {
    "7B": {"params": 6.7e9, "layers": 32, "hidden": 4096, "heads": 32},
    "13B": {"params": 13e9, "layers": 40, "hidden": 5120, "heads": 40},
    "70B": {"params": 70e9, "layers": 80, "hidden": 8192, "heads": 64},
    "175B": {"params": 175e9, "layers": 96, "hidden": 12288, "heads": 96},
}


def _case(r: random.Random, name: str, gpus: int, seq: int, batch: int) -> dict:
    model = {**MODELS[name], "seq_len": seq, "global_batch": batch}
    cluster = {**H100_CLUSTER, "gpus": gpus, "memory_bytes": r.choice((40e9, 80e9, 141e9)) if r else H100_CLUSTER["memory_bytes"]}
    return {"model": model, "cluster": cluster}


FIXED = [
    # The chapter's run: 70B on 1,024 GPUs, 1,024 sequences of 4,096 tokens.
    ("70B", 1024, 4096, 1024),
    # One node: everything on NVLink.
    ("7B", 8, 2048, 256),
    # A model whose states alone overflow a GPU without sharding: tensor, pipeline or ZeRO must help.
    ("175B", 512, 2048, 1536),
]


def _fits_somewhere(case: dict) -> bool:
    return any(plan_cost(case["model"], case["cluster"], plan)["fits"] for plan in valid_plans(case["model"], case["cluster"]))


def best_plan_cases(seed: int) -> list[dict]:
    r = random.Random(seed)
    cases = [_case(None, *fixed) for fixed in FIXED]
    while len(cases) < len(FIXED) + 5:
        case = _case(r, r.choice(sorted(MODELS)), r.choice((16, 64, 128, 256, 512)), r.choice((2048, 4096, 8192)), r.choice((256, 512, 768, 1024)))
        if _fits_somewhere(case):
            cases.append(case)
    return cases


def plan_cost_cases(seed: int) -> list[dict]:
    """Valid plans of the best-plan cases, fitting or not: every term of the model is exercised."""
    r = random.Random(seed)
    cases = []
    for case in best_plan_cases(seed):
        plans = list(valid_plans(case["model"], case["cluster"]))
        for plan in r.sample(plans, min(3, len(plans))):
            cases.append({**case, "plan": plan})
    return cases


def describe_plan_case(case: dict) -> str:
    model, cluster = case["model"], case["cluster"]
    text = (
        f"{model['params'] / 1e9:,.1f}B parameters, {model['layers']} layers, {model['global_batch']} x {model['seq_len']} tokens "
        f"on {cluster['gpus']} GPUs of {cluster['memory_bytes'] / 1e9:,.0f} GB"
    )
    return text + (f", plan {case['plan']}" if "plan" in case else "")
