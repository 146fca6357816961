# expect: REJECT
# problem: act0.saxpy
# devices: cuda
# CuPy's own elementwise kernels do the work.


def saxpy(a, x, y):
    return a * x + y
