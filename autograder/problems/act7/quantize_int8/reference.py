"""int8 per-channel symmetric quantisation: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize

reference = quantize.quantize_int8
make_cases = quantize.int8_cases
judge = quantize.judge_quantize_int8
