"""Ring and tree all-reduce in the alpha-beta model: the model's answer, on fixed edge cases and cases drawn from the seed."""

from .. import alpha_beta

reference = alpha_beta.allreduce_times
make_cases = alpha_beta.allreduce_cases
