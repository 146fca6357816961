# expect: FAIL
# devices: cuda
# entry: predict
# says: raised
# The time measured instead of predicted: the operation built from its description on the GPU and
# timed. A prediction's process has no GPU, so building it raises; were there one, its seconds would
# be no roofline time.
import torch
import triton


def predict(operation: dict, peak_flops: float, bandwidth: float) -> dict:
    element = {"float16": 2, "bfloat16": 2, "float32": 4}[operation["dtype"]]
    dtype = getattr(torch, operation["dtype"])
    kind = operation["op"]
    if kind == "add":
        n = operation["n"]
        flops, elements = n, 3 * n
        x = torch.randn(n, device="cuda", dtype=dtype)
        call = lambda: torch.add(x, x)  # noqa: E731
    elif kind == "matmul":
        m, n, k = operation["m"], operation["n"], operation["k"]
        flops, elements = 2 * m * n * k, m * k + k * n + m * n
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        call = lambda: a @ b  # noqa: E731
    else:
        rows, cols = operation["rows"], operation["cols"]
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        if kind == "transpose":
            flops, elements = 0, 2 * rows * cols
            call = lambda: x.t().contiguous()  # noqa: E731
        else:
            flops, elements = rows * cols, rows * cols + rows
            call = lambda: x.sum(dim=-1)  # noqa: E731
    seconds = triton.testing.do_bench(call, return_mode="median") * 1e-3
    limit = "overhead" if seconds < 5e-6 else ("compute" if flops / peak_flops >= elements * element / bandwidth else "memory")
    return {"bytes": elements * element, "flops": flops, "seconds": seconds, "limit": limit}
