"""Predict, then measure: the same predictions judged against the grader's timing of this GPU."""
