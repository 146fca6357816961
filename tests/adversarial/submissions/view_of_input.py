# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda


def vector_add(x, y):
    return y.view(-1)
