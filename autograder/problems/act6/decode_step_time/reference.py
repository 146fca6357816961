"""The least time of one decode step, and what bounds it: the reference and its cases (autograder/problems/act6/serving_math.py)."""

from .. import serving_math

reference = serving_math.decode_step_time
make_cases = serving_math.decode_cases
