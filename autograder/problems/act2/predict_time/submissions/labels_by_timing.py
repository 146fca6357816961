# expect: FAIL
# devices: cuda
# entry: predict
# says: raised
# Counts and roofline time right, but the limit read off a clock: the operation is built from its
# description on the GPU, timed, and called overhead-bound when it ran ten times slower than its
# roofline. A prediction's process has no GPU, so building the operation raises.
import torch
import triton


def _build(operation):
    dtype = getattr(torch, operation["dtype"])
    if operation["op"] == "add":
        x = torch.randn(operation["n"], device="cuda", dtype=dtype)
        return lambda: torch.add(x, x)
    if operation["op"] == "matmul":
        a = torch.randn(operation["m"], operation["k"], device="cuda", dtype=dtype)
        b = torch.randn(operation["k"], operation["n"], device="cuda", dtype=dtype)
        return lambda: a @ b
    x = torch.randn(operation["rows"], operation["cols"], device="cuda", dtype=dtype)
    return (lambda: x.t().contiguous()) if operation["op"] == "transpose" else (lambda: x.sum(dim=-1))


def predict(operation: dict, peak_flops: float, bandwidth: float) -> dict:
    element = {"float16": 2, "bfloat16": 2, "float32": 4}[operation["dtype"]]
    kind = operation["op"]
    if kind == "add":
        n = operation["n"]
        flops, elements = n, 3 * n
    elif kind == "matmul":
        m, n, k = operation["m"], operation["n"], operation["k"]
        flops, elements = 2 * m * n * k, m * k + k * n + m * n
    elif kind == "transpose":
        flops, elements = 0, 2 * operation["rows"] * operation["cols"]
    else:
        rows, cols = operation["rows"], operation["cols"]
        flops, elements = rows * cols, rows * cols + rows
    bytes_moved = elements * element
    compute_s, memory_s = flops / peak_flops, bytes_moved / bandwidth
    seconds = max(compute_s, memory_s)
    measured = triton.testing.do_bench(_build(operation), return_mode="median") * 1e-3
    if measured >= 10 * seconds:
        limit = "overhead"
    else:
        limit = "compute" if compute_s >= memory_s else "memory"
    return {"bytes": bytes_moved, "flops": flops, "seconds": seconds, "limit": limit}
