"""Ridge points per dtype: the reference, on the spec table's GPUs and random ones."""

from .. import gpu_specs

reference = gpu_specs.ridge_points
make_cases = gpu_specs.spec_cases
