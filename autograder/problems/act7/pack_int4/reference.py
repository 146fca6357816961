"""Two int4 values per byte: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize, quantize_cases, quantize_judges

reference = quantize.pack_int4
make_cases = quantize_cases.pack_cases
judge = quantize_judges.judge_pack_int4
