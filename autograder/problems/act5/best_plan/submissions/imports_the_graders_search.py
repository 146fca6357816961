# expect: REJECT
# devices: cpu cuda
# Asks the grader's own search for the plan instead of writing the cost model and searching.
from autograder.problems.act5 import parallel_plan


def best_plan(model, cluster):
    return parallel_plan.best_plan(model, cluster)
