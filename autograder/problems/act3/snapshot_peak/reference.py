"""The peak of a memory snapshot: the grader's reading of the contract (autograder.problems.act3.snapshots
draws the snapshots and names the cases)."""

from .. import snapshots

make_cases = snapshots.snapshot_cases
describe_case = snapshots.describe_snapshot_case


def reference(snapshot: dict) -> dict:
    return snapshots.peak_from_snapshot(snapshot)
