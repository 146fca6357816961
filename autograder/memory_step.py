"""Exercises graded on how much memory a training step holds at its peak, with the same gradients.

The learner writes ``lean_training_step(model, x)``: the loss ``model(x).square().mean()`` after its
backward pass, by any means that keeps less alive at once (activation checkpointing, in-place
operations). It is graded on the CPU on every machine: bytes are bytes, whatever the device.

Measured from outside. Each step runs in a fresh worker that built the grader's model from a seed
the judge drew, warmed it up and then (the learner's worker only) was sealed: Landlock with no
writable folder (no files, no /proc/self/clear_refs), a seccomp filter (autograder.seccomp: no
shared memory, pipes, sockets, child processes or paging out), a cap on the size of any file it
writes to (its inherited output). The judge resets the worker's high-water mark of resident memory,
reads its resident set, lets it load the learner's module and take the step, and reads the mark
again (and samples the resident set meanwhile): the step's peak is the difference, memory the
module keeps after loading included. The plain step is measured the same way in a trusted worker
that runs no learner code, in the same grading; its gradients are the reference.
glibc's malloc is told to map every block of 64 KiB or more on its own (MALLOC_MMAP_THRESHOLD_), so
that a freed activation leaves the resident set at once and a later one cannot hide in its pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from .python_problems import CorrectnessOnly

WORKER_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}
# The largest file the learner's worker may write to (its output, already open): activations
# written there and read back through /proc/self/fd would be memory the resident set does not see.
MAX_FILE_BYTES = 8 << 20


@dataclass
class MemoryProblem(CorrectnessOnly):
    """make_model(seed) -> (model, x) on the CPU; plain_step(model, x) -> loss after its backward;
    warm_up(model, x) does the one-time set-up both workers pay before measuring (thread pools,
    the checkpoint module's imports). The learner's step passes at ``max_fraction`` of the plain
    step's peak or below, with gradients within ``grad_tolerance`` of the largest entry of each."""

    name: str
    title: str
    notebook: str
    function: str
    make_model: Callable
    plain_step: Callable
    warm_up: Callable
    max_fraction: float
    grad_tolerance: float = 1e-4
    arguments: tuple[str, ...] = ("model", "x")
    correctness_points: float = 3.0
    language: str = "python"
    speed_points: float = 0.0
    notes: dict = field(default_factory=dict)
    kind: ClassVar[str] = "memory"


# --- In the worker ------------------------------------------------------------------------------------


class Harness:
    """The grader's model and input in the worker, and the step on them: the plain one (the trusted
    worker) or the learner's."""

    def __init__(self, problem, seed: int | None) -> None:
        self.problem = problem
        self.model = self.x = self.loss = None
        if seed is not None:
            self.model, self.x = problem.make_model(seed)
            problem.warm_up(self.model, self.x)

    def __call__(self, module, entry: str, request: dict, payload: bytes, device: str, error) -> tuple[dict, bytes]:
        import torch

        if request["action"] == "plain":
            self.loss = self.problem.plain_step(self.model, self.x)
            return {"done": True}, b""
        if request["action"] == "step":
            try:
                loss = getattr(module, entry)(self.model, self.x)
            except Exception as exc:  # noqa: BLE001 -- the learner's exception is the verdict
                return {"error": error(exc)}, b""
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                return {"wrong_type": f"{entry} must return the loss, a tensor of one element; it returned {type(loss).__name__}"}, b""
            self.loss = loss
            return {"done": True}, b""
        return self._gradients()

    def _gradients(self) -> tuple[dict, bytes]:
        import torch

        found, missing, blobs = [], [], []
        for name, parameter in self.model.named_parameters():
            grad = parameter.grad
            if not isinstance(grad, torch.Tensor) or tuple(grad.shape) != tuple(parameter.shape):
                missing.append(name)
                continue
            found.append([name, list(parameter.shape)])
            blobs.append(grad.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
        loss = float(self.loss.detach().to(torch.float64).reshape(()))
        return {"loss": loss, "found": found, "missing": missing}, b"".join(blobs)


def seal() -> dict:
    """What the learner's worker may no longer do, once the model is built and before the learner's
    module is loaded (after autograder.osguard.confine)."""
    import resource

    from . import seccomp

    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    return {"syscalls": seccomp.forbid_hidden_memory(), "file_size": f"files written up to {MAX_FILE_BYTES >> 20} MiB"}
