# expect: ERROR
# devices: cuda
# entry: predict
# The exercise's six operations, known from its text, timed on the GPU when the module is imported,
# before anything is asked; counts and roofline times are right and only each limit is read off
# those times. With a GPU it would earn the points; a prediction's process has none, so the import
# fails and the grading says so.
import time

import torch

OPERATIONS = (
    ("add", (1 << 27,)),
    ("matmul", (8192, 8192, 8192)),
    ("transpose", (16384, 16384)),
    ("row_sum", (16384, 16384)),
    ("add", (1024,)),
    ("matmul", (64, 64, 64)),
)


def _time(kind, shape):
    if kind == "add":
        x = torch.randn(shape[0], device="cuda", dtype=torch.float16)
        run = lambda: torch.add(x, x)  # noqa: E731
    elif kind == "matmul":
        a = torch.randn(shape[0], shape[2], device="cuda", dtype=torch.float16)
        b = torch.randn(shape[2], shape[1], device="cuda", dtype=torch.float16)
        run = lambda: a @ b  # noqa: E731
    else:
        x = torch.randn(*shape, device="cuda", dtype=torch.float16)
        run = (lambda: x.t().contiguous()) if kind == "transpose" else (lambda: x.sum(dim=-1))  # noqa: E731
    run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    run()
    torch.cuda.synchronize()
    return time.perf_counter() - start


MEASURED = {(kind, shape): _time(kind, shape) for kind, shape in OPERATIONS}


def _counts(operation):
    b, kind = {"float16": 2, "bfloat16": 2, "float32": 4}[operation["dtype"]], operation["op"]
    if kind == "add":
        return (kind, (operation["n"],)), operation["n"], 3 * operation["n"] * b
    if kind == "matmul":
        m, n, k = operation["m"], operation["n"], operation["k"]
        return (kind, (m, n, k)), 2 * m * n * k, (m * k + k * n + m * n) * b
    rows, cols = operation["rows"], operation["cols"]
    if kind == "transpose":
        return (kind, (rows, cols)), 0, 2 * rows * cols * b
    return (kind, (rows, cols)), rows * cols, (rows * cols + rows) * b


def predict(operation: dict, peak_flops: float, bandwidth: float) -> dict:
    # Counts and roofline time as the exercise wants them; only the limit comes from the clock.
    key, flops, moved = _counts(operation)
    seconds = max(flops / peak_flops, moved / bandwidth)
    side = "compute" if flops / peak_flops >= moved / bandwidth else "memory"
    limit = "overhead" if MEASURED.get(key, seconds) >= 10 * seconds else side
    return {"bytes": moved, "flops": flops, "seconds": seconds, "limit": limit}
