"""int8 per-channel symmetric quantisation: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize, quantize_cases, quantize_judges

reference = quantize.quantize_int8
make_cases = quantize_cases.int8_cases
judge = quantize_judges.judge_quantize_int8
