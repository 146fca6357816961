# expect: FAIL
# devices: cpu cuda
# entry: predict
# says: seconds is
# The time is the bytes at the bandwidth, whatever the FLOPs: the matmul's compute term is dropped.
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
    seconds = memory_s
    if seconds < 5e-6:
        limit = "overhead"
    else:
        limit = "compute" if compute_s >= memory_s else "memory"
    return {"bytes": bytes_moved, "flops": flops, "seconds": seconds, "limit": limit}
