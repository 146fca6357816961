# expect: REJECT
# entry: bubble_report
# devices: cpu cuda
# says: float64 references and eager steps
# Cheat: the grader's own list of what counts as GPU work, taken from Act 8's shared module instead of
# read from the trace.
from autograder.megakernels import GPU_CATEGORIES


def bubble_report(events):
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES)
    if not spans:
        return {"launches": 0, "busy_us": 0.0, "gap_us": 0.0, "saving": 0.0}
    busy, (start, end) = 0.0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            busy += end - start
            start = s
        end = max(end, e)
    busy += end - start
    total = spans[-1][1] - spans[0][0]
    return {"launches": len(spans), "busy_us": busy, "gap_us": total - busy, "saving": (total - busy) / total if total else 0.0}
