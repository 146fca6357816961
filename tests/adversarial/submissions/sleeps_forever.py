# expect: TIMEOUT
# timeout: 20
# problem: act0.vector_add
# devices: cpu cuda
import time


def vector_add(x, y):
    time.sleep(10**6)
