"""int4 group-wise dequantisation: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize, quantize_cases, quantize_judges

reference = quantize.dequantize_int4
make_cases = quantize_cases.dequantize_int4_cases
judge = quantize_judges.judge_dequantize_int4
