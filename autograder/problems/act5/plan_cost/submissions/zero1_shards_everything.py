# expect: FAIL
# devices: cpu cuda
# ZeRO stage 1 taken to shard the weights and gradients as well as the optimizer's state: the
# memory of every stage-1 and stage-2 plan comes out too small.
def plan_cost(model: dict, cluster: dict, plan: dict) -> dict:
    """Memory per GPU (bytes), the 1F1B bubble, the predicted step (seconds) and whether it fits,
    by the cost model above, for a valid plan {"tp", "pp", "dp", "zero", "micro_batch"}."""
    t, p, d, zero, b = plan["tp"], plan["pp"], plan["dp"], plan["zero"], plan["micro_batch"]
    s, h, layers, batch = model["seq_len"], model["hidden"], model["layers"], model["global_batch"]
    phi = model["params"] / (t * p)
    state = phi * (16 / d if zero >= 1 else 16)
    m = batch // (d * b)
    activations = min(p, m) * (layers // p) * s * b * h * (10 + 24 / t)
    memory = state + activations

    def link(span):
        return cluster["nvlink"] if span <= cluster["gpus_per_node"] else cluster["network"]

    def ring(size, ranks, link):
        alpha, bandwidth = link
        return 0.0 if ranks == 1 else 2 * (ranks - 1) * (alpha + size / (ranks * bandwidth))

    compute = 6 * model["params"] * batch * s / (cluster["gpus"] * cluster["flops"] * cluster["mfu"])
    message = 2 * s * b * h
    tensor = m * (layers // p) * 4 * ring(message, t, link(t))
    alpha, bandwidth = link(t * d * p)
    pipeline = 2 * (m + p - 1) * (alpha + message / bandwidth) if p > 1 else 0.0
    data = ring(2 * phi, d, link(t * d)) * (1.5 if zero == 3 else 1.0)
    step = compute * (m + p - 1) / m + tensor + pipeline + data
    return {"memory_bytes": memory, "bubble": (p - 1) / (m + p - 1), "step_s": step, "fits": memory <= cluster["memory_bytes"]}
    ### END SOLUTION