# expect: FAIL
# devices: cpu cuda
# Reads the whole trace instead of the step: the warm-up kernel before the step is counted, and the
# span runs from the first event of any kind.
def summarize_trace(trace, top):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    device = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    busy, reach = 0.0, start
    for begin, finish in sorted((e["ts"], e["ts"] + e["dur"]) for e in device):
        if finish > reach:
            busy += finish - max(begin, reach)
            reach = finish
    idle = 1.0 - busy / (end - start)
    totals = {}
    for e in device:
        if e["cat"] == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:top]
    matmul = sum(t for name, t in totals.items() if any(w in name.lower() for w in ("gemm", "matmul", "cutlass", "nvjet")))
    kernel_time = sum(totals.values())
    regime = "overhead" if idle >= 0.5 or not kernel_time else "compute" if matmul >= 0.5 * kernel_time else "memory"
    return {"top_kernels": [list(pair) for pair in ranked], "idle_share": idle, "regime": regime}
