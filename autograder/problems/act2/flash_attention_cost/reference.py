"""FLOPs and bytes of flash attention: the reference, on the cases every cost model of attention shares."""

from .. import models

reference = models.flash_attention_cost
make_cases = models.attention_cases
