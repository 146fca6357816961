# expect: FAIL
# devices: cpu cuda
# Busy time as the sum of the device events' durations: kernels overlapping on two streams are
# counted twice, so the idle share comes out too small (even negative).
def summarize_trace(trace, top):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    step = min((e for e in events if e["cat"] == "user_annotation" and e["name"] == "step"), key=lambda e: e["ts"])
    device = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and e["ts"] >= step["ts"]]
    end = max([step["ts"] + step["dur"]] + [e["ts"] + e["dur"] for e in device])
    idle = 1.0 - sum(e["dur"] for e in device) / (end - step["ts"])
    totals = {}
    for e in device:
        if e["cat"] == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:top]
    matmul = sum(t for name, t in totals.items() if any(w in name.lower() for w in ("gemm", "matmul", "cutlass", "nvjet")))
    kernel_time = sum(totals.values())
    regime = "overhead" if idle >= 0.5 or not kernel_time else "compute" if matmul >= 0.5 * kernel_time else "memory"
    return {"top_kernels": [list(pair) for pair in ranked], "idle_share": idle, "regime": regime}
