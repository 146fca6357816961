"""Distributed exercises: the learner's function runs as N ranks of a ``torch.distributed`` group,
and the judge checks what every rank returns against answers it computed itself.

How a grading goes (the judge, autograder.judge_grading, calls autograder.distributed_cases.grade):

- Ranks are workers (autograder._worker; autograder.distributed_ranks), one process each, started, sandboxed and ended by the
  judge like the single worker of every other exercise: rank 0 is the grading's learner worker,
  ranks 1.. are started here. Each holds only its own inputs; the reference never leaves the judge.
- Correctness runs everywhere with the gloo backend on CPU tensors: for each case (a world size and
  a size, fresh inputs from a secret seed) the judge picks a free port, every rank joins the group
  (rank 0 hosts its store), calls the learner's function, and answers with its outputs as raw bytes
  and the record of every ``torch.distributed`` operation it issued (autograder.ranks.CommRecord). A
  problem whose ``relay`` is set (all three) has no gloo and no network: its ranks'
  messages and all-reduces cross the judge, which counts them (autograder.relay), and the judge's
  count replaces the ranks' own.
  Every rank's output is checked, so a result that is right on rank 0 only fails.
- A rank that does not answer within the case's time limit is a TIMEOUT that names it and the ranks
  that did answer; every rank is then ended with all it started. A rank that raises fails the case,
  and the others (perhaps stuck waiting for it) are ended.
- The problem's ``check_comm`` reads the records: which library operations did the work (a ring
  built on ``dist.all_reduce`` is REJECTED: the library's collective, not the learner's), and
  whether the communication has the shape the exercise asks for (a ring's traffic, one all-reduce
  per gradient bucket issued during the backward pass).
- Speed (only with >= 2 GPUs; autograder.distributed_speed): the same function as ranks on NCCL, timed by the judge's own clock
  from its go to the last rank's answer; then, once the learner's ranks are gone, the library's
  collective in trusted ranks with the same protocol. The grade is the ratio of bus bandwidths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .problem import LinearScale
from .python_problems import CorrectnessAndSpeed

# The key of a case's inputs that the judge keeps and never sends to a rank (the additions at the
# crossings of autograder.ddp_model).
JUDGE_ONLY = "judge_additions"


@dataclass(frozen=True)
class BusBandwidthSpeed:
    """The speed part of a collective: its bus bandwidth against the library's, both measured in the
    same grading on ``world_size`` GPUs with NCCL at ``numel`` float32 elements per rank."""

    library: str
    library_source: str
    world_size: int
    numel: int
    scale: LinearScale
    solution_target: float
    calls: int = 10
    algorithm_factor: Callable[[int], float] = lambda n: 2 * (n - 1) / n


@dataclass
class DistributedProblem(CorrectnessAndSpeed):
    """A distributed exercise.

    make_case(size, world_size, seed) -> one dict of keyword arguments per rank (tensors, numbers).
    reference(inputs) -> per rank, a dict of output name -> the exact answer (float64).
    tolerance(inputs, expected) -> per rank, a dict of output name -> allowed absolute error (a
        number or a tensor of the output's shape), derived from the computation.
    check_comm(records, world_size, size, inputs) -> (status, message) for the ranks' records of
        communication: ("REJECT", why) when a library did the work, ("UNEXPLAINED", why) when right
        answers could not have come through the recorded traffic (rejected only if they are right),
        ("FAIL", why) when the traffic is not what the exercise asks for, (None, facts) when it is.
    cases -> (world_size, size) pairs, in order; the first world sizes are the small ones.
    """

    name: str
    title: str
    notebook: str
    function: str
    arguments: tuple[str, ...]
    outputs: tuple[str, ...]
    make_case: Callable[[Any, int, int], list]
    reference: Callable[[list], list]
    tolerance: Callable[[list, list], list]
    cases: Sequence[tuple[int, Any]]
    check_comm: Callable[..., tuple[str | None, str]] | None = None
    describe_size: Callable[[Any], str] | None = None
    correctness_points: float = 2.0
    speed: BusBandwidthSpeed | None = None
    speed_points: float = 0.0
    case_timeout: float = 60.0
    # The ranks' messages go through the judge, which counts them, and the ranks have no network and
    # no library collective (autograder.relay); the timed run on NCCL keeps its own network.
    relay: bool = False
    # The collectives the judge computes itself on the relay ("allreduce"); every other is refused.
    relay_collectives: tuple[str, ...] = ()
    language: str = "python"
    notes: dict = field(default_factory=dict)
    kind: ClassVar[str] = "distributed"

    @property
    def world_sizes(self) -> list[int]:
        return sorted({w for w, _ in self.cases})

    def size_label(self, world_size: int, size) -> str:
        shown = self.describe_size(size) if self.describe_size else (f"{size:,}" if isinstance(size, int) else str(size))
        return f"{world_size} ranks, {shown}"


# -- the verdict ----------------------------------------------------------------------------------------
def score(problem: DistributedProblem, result: dict, device: str) -> dict:
    """Correctness all or nothing; speed points from the ratio of bus bandwidths, only after a
    correct and honest run, only where it was measured."""
    result.setdefault("cases", [])
    result.setdefault("speed", [])
    result.setdefault("device", device)
    result["exercise"] = _exercise(problem).to_dict()
    result["title"] = problem.title
    result["max_points"] = problem.max_points
    speed = result.get("distributed_speed") or {}
    measured = "ratio" in speed
    result["max_points_here"] = problem.correctness_points + (problem.speed_points if measured else 0.0)
    correct = problem.correctness_points if result["status"] == "PASS" else 0.0
    points = 0.0
    result["speed_note"] = ""
    if problem.speed is None:
        pass
    elif result["status"] != "PASS":
        result["speed_note"] = "speed is graded only once every rank is right"
    elif speed.get("wrong"):
        result.update(status="REJECT" if speed.get("reject") else "FAIL", message=speed["note"])
        correct = 0.0
    elif not measured:
        spec = problem.speed
        result["speed_note"] = speed.get("note") or (
            f"needs {spec.world_size} GPUs: speed is graded on {spec.world_size} GPUs with NCCL, as bus bandwidth against {spec.library} at {spec.numel * 4 / 2**20:.0f} MiB"
        )
    else:
        scale = problem.speed.scale
        points = problem.speed_points * scale.fraction(speed["ratio"])
        result["speed_metric"] = {"name": "library_ratio", "value": speed["ratio"]}
        result["speed_note"] = (
            f"bus bandwidth {speed['busbw'] / 1e9:,.1f} GB/s against {speed['library']}'s {speed['library_busbw'] / 1e9:,.1f} GB/s "
            f"({speed['ratio']:.2f}x) at {speed['bytes'] / 2**20:.0f} MiB on {speed['world_size']} GPUs; {scale.describe()}"
        )
    result["correctness_points"] = correct
    result["speed_points"] = round(points, 2)
    result["points"] = round(correct + points, 2)
    return result


def _exercise(problem: DistributedProblem):
    """What the report says about the exercise: its speed is a ratio of bus bandwidths to the library's."""
    from .result import Exercise

    exercise = Exercise.of(problem)
    if problem.speed is not None:
        exercise.speed_graded = True
        exercise.library_name = problem.speed.library
        exercise.scale_text = problem.speed.scale.describe()
        exercise.metric_name = "library_ratio"
    return exercise
