# expect: FAIL
# devices: cpu cuda
# The fastest plan whether or not it fits: without sharding or pipelining, the largest models'
# training state and activations overflow the GPUs, so the plan returned could never run.
def plan_cost(model: dict, cluster: dict, plan: dict) -> dict:
    """Memory per GPU (bytes), the 1F1B bubble, the predicted step (seconds) and whether it fits,
    by the cost model above, for a valid plan {"tp", "pp", "dp", "zero", "micro_batch"}."""
    t, p, d, zero, b = plan["tp"], plan["pp"], plan["dp"], plan["zero"], plan["micro_batch"]
    s, h, layers, batch = model["seq_len"], model["hidden"], model["layers"], model["global_batch"]
    phi = model["params"] / (t * p)
    state = phi * (2 * (1 / d if zero >= 3 else 1) + 2 * (1 / d if zero >= 2 else 1) + 12 * (1 / d if zero >= 1 else 1))
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

def best_plan(model: dict, cluster: dict) -> dict:
    """{"tp", "pp", "dp", "zero", "micro_batch"} of the valid plan that fits with the smallest
    predicted step (any of the fastest within 1% is right)."""
    def divisors(n):
        return [k for k in range(1, n + 1) if n % k == 0]

    n, best, best_step = cluster["gpus"], None, float("inf")
    for t in divisors(cluster["gpus_per_node"]):
        if model["heads"] % t or n % t:
            continue
        for p in divisors(model["layers"]):
            if (n // t) % p or model["global_batch"] % (n // (t * p)):
                continue
            d = n // (t * p)
            for b in divisors(model["global_batch"] // d):
                for zero in range(4):
                    plan = {"tp": t, "pp": p, "dp": d, "zero": zero, "micro_batch": b}
                    cost = plan_cost(model, cluster, plan)
                    if cost["step_s"] < best_step:
                        best, best_step = plan, cost["step_s"]
    if best is None:
        raise ValueError("no valid plan fits in the GPUs' memory")
    return best
    ### END SOLUTION