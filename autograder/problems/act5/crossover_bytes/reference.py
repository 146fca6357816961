"""Where the ring overtakes the tree: the model's answer, on fixed edge cases and cases drawn from the seed."""

from .. import alpha_beta

reference = alpha_beta.crossover_bytes
make_cases = alpha_beta.crossover_cases
