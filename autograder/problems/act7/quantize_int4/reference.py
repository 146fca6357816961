"""int4 group-wise asymmetric quantisation, packed: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize

reference = quantize.quantize_int4
make_cases = quantize.int4_cases
judge = quantize.judge_quantize_int4
