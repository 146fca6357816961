# expect: FAIL
# entry: bubble_report
# devices: cpu cuda
# Busy time as the sum of the GPU events' durations: a copy that overlaps a kernel is counted twice.
def bubble_report(events):
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not gpu:
        return {"launches": 0, "busy_us": 0.0, "gap_us": 0.0, "saving": 0.0}
    busy = sum(e["dur"] for e in gpu)
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    gap = span - busy
    return {"launches": len(gpu), "busy_us": busy, "gap_us": gap, "saving": gap / span if span > 0 else 0.0}
