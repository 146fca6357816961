"""Reading a trace: the grader's rule (autograder.profiles), the seeded traces and how the report names them."""

from .... import profiles
from .. import profiling

reference = profiles.summarize_trace
make_cases = profiling.trace_cases
describe_case = profiling.describe_trace_case
