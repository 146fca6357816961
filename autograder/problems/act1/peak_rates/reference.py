"""Peak FLOP/s and bandwidth from a spec table: the reference, on the spec table's GPUs and random ones."""

from .. import gpu_specs

reference = gpu_specs.peak_rates
make_cases = gpu_specs.spec_cases
