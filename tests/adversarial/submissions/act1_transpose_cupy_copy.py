# expect: REJECT
# problem: act1.transpose
# devices: cuda
# CuPy's own copy kernel does the transpose: right answers, but no kernel of the learner's runs.
import cupy as cp


def transpose(x):
    return cp.ascontiguousarray(x.T)
