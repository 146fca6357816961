# expect: ERROR
# problem: act0.vector_add
# devices: cpu cuda
# Writes what a passing result file might look like wherever it can, then leaves before grading.
import json
import os

fake = {"problem": "act0.vector_add", "status": "PASS", "message": "all cases correct", "cases": [], "speed": []}
for name in ("result.json", "result.json.tmp"):
    with open(name, "w") as f:
        json.dump(fake, f)
for fd in range(3, 64):
    try:
        os.write(fd, json.dumps(fake).encode())
    except OSError:
        pass
os._exit(0)


def vector_add(x, y):
    return x + y
