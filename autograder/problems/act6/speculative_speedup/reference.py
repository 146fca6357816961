"""Speculative decoding's expected speedup: the reference and its cases (autograder/problems/act6/serving_math.py)."""

from .. import serving_math

reference = serving_math.speculative_speedup
make_cases = serving_math.speculative_cases
