"""int8 dequantisation: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize, quantize_cases, quantize_judges

reference = quantize.dequantize_int8
make_cases = quantize_cases.dequantize_int8_cases
judge = quantize_judges.judge_dequantize_int8
