# expect: FAIL
# problem: act3.read_trace
# devices: cuda
# Profiles CPU activity only: the trace has operators but no kernel, so the GPU's timeline (its top
# kernels, its idle time) is not in it.
import json
import os
import tempfile

from torch.profiler import ProfilerActivity, profile, record_function


def read_trace(step):
    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("step"):
            step()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    totals = {}
    for e in events:
        if e["cat"] == "cpu_op":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:3]
    return {"top_kernels": [list(pair) for pair in ranked], "idle_share": 0.0, "regime": "compute"}
