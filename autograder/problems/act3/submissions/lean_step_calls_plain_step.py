# expect: REJECT
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: gc.get_objects
# Cheat: finds the grader's harness among the worker's objects and calls its own plain step. The
# reference gradients never enter this process, and the plain step has the plain step's peak.
# The sealed worker (autograder.seal) refuses it the garbage collector's objects and rejects the grading.
import gc


def lean_training_step(model, x):
    harness = next(o for o in gc.get_objects() if type(o).__name__ == "Harness")
    return harness.problem.plain_step(model, x)
