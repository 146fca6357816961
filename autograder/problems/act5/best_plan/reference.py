"""The fastest 3-D parallel plan that fits: the grader's search over every valid plan, and the judge
that takes any valid, fitting plan within 1% of its predicted step (several plans can tie)."""

from .. import parallel_plan

reference = parallel_plan.best_plan
make_cases = parallel_plan.best_plan_cases
judge = parallel_plan.judge_plan
describe_case = parallel_plan.describe_plan_case
