# expect: FAIL
# devices: cpu cuda
# The matrix-multiply names of cuBLAS and CUTLASS only: on Hopper, cuBLASLt's nvjet_* kernels do the
# matrix multiplies, so a compute-bound step of an H100 reads as memory-bound.
import re


def summarize_trace(trace, top):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    step = min((e for e in events if e["cat"] == "user_annotation" and e["name"] == "step"), key=lambda e: e["ts"])
    start = step["ts"]
    device = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and e["ts"] >= start]
    end = max([step["ts"] + step["dur"]] + [e["ts"] + e["dur"] for e in device])
    busy, reach = 0.0, start
    for begin, finish in sorted((e["ts"], e["ts"] + e["dur"]) for e in device):
        if finish > reach:
            busy += finish - max(begin, reach)
            reach = finish
    idle = 1.0 - busy / (end - start) if end > start else 1.0
    totals = {}
    for e in device:
        if e["cat"] == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:top]
    matmul = sum(t for name, t in totals.items() if re.search("gemm|matmul|cutlass", name, re.IGNORECASE))
    kernel_time = sum(totals.values())
    regime = "overhead" if idle >= 0.5 or not kernel_time else "compute" if matmul >= 0.5 * kernel_time else "memory"
    return {"top_kernels": [list(pair) for pair in ranked], "idle_share": idle, "regime": regime}
