"""KV-cache capacity: bytes per token, blocks, the largest batch: the reference and its cases (autograder/problems/act6/serving_math.py)."""

from .. import serving_math

reference = serving_math.kv_capacity
make_cases = serving_math.capacity_cases
