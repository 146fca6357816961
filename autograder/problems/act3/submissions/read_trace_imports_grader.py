# expect: REJECT
# problem: act3.read_trace
# devices: cuda
# Asks the grader's own profiling code for the answer instead of reading a profile.
from autograder import profiles


def read_trace(step):
    summary = profiles.profile_step(step, 3)
    top = sorted(summary["all_kernels"].items(), key=lambda item: -item[1])[:3]
    return {"top_kernels": [list(pair) for pair in top], "idle_share": summary["idle_share"], "regime": summary["regime"]}
