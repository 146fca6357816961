"""A 3-D parallel plan's memory per GPU, pipeline bubble and predicted step time: the model's answer
on valid plans (fitting or not) of the best-plan cases."""

from .. import parallel_plan

reference = parallel_plan.plan_cost
make_cases = parallel_plan.plan_cost_cases
describe_case = parallel_plan.describe_plan_case
