# expect: COMPILE ERROR
# problem: act0.vector_add
# devices: cpu cuda
def vector_add(x, y)
    return x + y
