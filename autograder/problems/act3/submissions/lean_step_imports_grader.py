# expect: REJECT
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: problem definitions
# Cheat: imports the grader's problem module to run its plain step (and look for its gradients).
from autograder.problems.act3 import memory


def lean_training_step(model, x):
    return memory.plain_step(model, x)
