# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# Borrows the grader's own reference instead of writing a kernel.
from autograder.problems.act0.vector_add.reference import reference as vector_add_reference


def vector_add(x, y):
    return vector_add_reference(x, y).float()
