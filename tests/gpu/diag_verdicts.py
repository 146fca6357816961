"""Grade named adversarial submissions on this GPU and print each verdict with the judge's account of
it (stage seconds, failed cases, traceback, output): for a verdict the suite reports as wrong.

    python tests/gpu/diag_verdicts.py CASE [CASE ...]
"""

import sys
import time

from autograder import grading, registry
from tests.adversarial.cases import cases

names = sys.argv[1:]
for c in cases("cuda", alone=False):
    if c.name not in names:
        continue
    t = time.time()
    r = grading.grade_source(registry.get(c.problem), c.source, c.entry, device="cuda", timeout=70)
    print(c.name, round(time.time() - t, 1), r["status"], (r.get("message") or "")[:500], r.get("stage_seconds"), flush=True)
    print("  TRACE", (r.get("traceback") or "")[-1500:], flush=True)
    print("  OUT", (r.get("output") or "")[-1500:], flush=True)
    print("  CASES", [(x.get("size"), x.get("passed"), (x.get("message") or "")[:100]) for x in r.get("cases", [])][:12], flush=True)
