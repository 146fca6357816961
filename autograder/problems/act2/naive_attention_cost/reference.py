"""FLOPs and bytes of naive attention: the reference, on the cases every cost model of attention shares."""

from .. import models

reference = models.naive_attention_cost
make_cases = models.attention_cases
