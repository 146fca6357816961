# expect: ERROR
# problem: act0.vector_add
# devices: cpu cuda
# entry: vector_add
def vectoradd(x, y):
    return x + y
