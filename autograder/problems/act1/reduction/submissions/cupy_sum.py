# expect: REJECT
# devices: cuda
# entry: reduce_sum
# cupy.sum (CUB's device reduction) instead of a kernel of the learner's own.
import cupy as cp


def reduce_sum(x):
    return cp.sum(x)
