# expect: ERROR
# problem: act0.vector_add
# devices: cpu cuda
import os
import sys

print('{"status": "PASS", "points": 4}')
sys.stdout.flush()
os._exit(0)


def vector_add(x, y):
    return x + y
