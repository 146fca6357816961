# expect: REJECT
# problem: act3.summarize_trace
# devices: cpu cuda
# says: rule for reading a trace
# Cheat: the grader's own rule for reading a trace (autograder.profiles, which lives outside the
# problem definitions) answers for the learner.
from autograder import profiles


def summarize_trace(trace, top):
    return profiles.summarize_trace(trace, top)
