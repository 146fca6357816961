"""Two int4 values per byte: the reference, its cases (fixed edge cases, then weights drawn from the seed, some with
outliers) and the judge that allows exactly the error the format brings."""

from .. import quantize

reference = quantize.pack_int4
make_cases = quantize.pack_cases
judge = quantize.judge_pack_int4
