"""KV slots wasted by static reservation and by paging: the reference and its cases (autograder/problems/act6/serving_math.py)."""

from .. import serving_math

reference = serving_math.reservation_waste
make_cases = serving_math.waste_cases
