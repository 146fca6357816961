# expect: REJECT
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: problem definitions
# Cheat: the worker of this exercise loaded the problem definitions before the learner's code (to
# build the grader's model), so the package attribute `autograder.problems` was still there to take.
from autograder import problems


def lean_training_step(model, x):
    return problems.act3.memory.plain_step(model, x)
