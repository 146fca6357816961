"""Algorithm and bus bandwidth, as nccl-tests reports them: the model's answer, on fixed edge cases and cases drawn from the seed."""

from .. import alpha_beta

reference = alpha_beta.bus_bandwidth
make_cases = alpha_beta.bus_cases
