# expect: ERROR REJECT
# problem: act3.summarize_trace
# devices: cpu cuda
# says: Permission denied
# Cheat: the import of the grader's trace rule is refused, so the learner's code reads its source
# file (autograder/profiles.py) from disk and runs it.
import os

import autograder

_rules: dict = {}
with open(os.path.join(os.path.dirname(autograder.__file__), "profiles.py"), encoding="utf-8") as source:
    exec(compile(source.read(), "profiles_copy.py", "exec"), _rules)


def summarize_trace(trace, top):
    return _rules["summarize_trace"](trace, top)
