# expect: FAIL
# entry: bubble_report
# devices: cpu cuda
# Every complete event taken as GPU work, host calls (cudaLaunchKernel) and operators included.
def bubble_report(events):
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X")
    if not spans:
        return {"launches": 0, "busy_us": 0.0, "gap_us": 0.0, "saving": 0.0}
    busy, (start, end) = 0.0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    busy += end - start
    span = max(e for _, e in spans) - spans[0][0]
    return {"launches": len(spans), "busy_us": busy, "gap_us": span - busy, "saving": (span - busy) / span if span > 0 else 0.0}
