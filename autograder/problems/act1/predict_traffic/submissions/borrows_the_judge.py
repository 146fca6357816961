# expect: REJECT
# devices: cpu cuda
# entry: predict_traffic
# says: problem definitions
# The grader's own rules imported instead of written: the problem definitions are refused to the learner's code.
from autograder.problems.act1.predict_traffic.reference import reference


def predict_traffic(access: dict) -> dict:
    return reference(access)
