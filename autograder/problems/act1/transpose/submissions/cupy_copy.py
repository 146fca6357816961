# expect: REJECT
# devices: cuda
# CuPy's own copy kernel does the transpose: right answers, but no kernel of the learner's runs.
# (cupy.ascontiguousarray would hand back the input itself for a 1xN matrix, whose transpose is
# already contiguous: copy() always makes a new array.)


def transpose(x):
    return x.T.copy(order="C")
