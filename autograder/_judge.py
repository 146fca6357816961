"""The judge: one grading, in a process where the learner's code never runs.
``python -m autograder._judge`` with the job as JSON on standard input; the result, as JSON, on
standard output.

It makes the inputs, computes the references and tolerances, measures this GPU's ceilings, times
every call with its own events, and decides the verdict and points (autograder.verdict). The
learner's code runs in a worker (autograder._worker) that it starts, sandboxes and ends with all
its descendants; the library baseline runs in a second, trusted worker once the learner's is gone.
Its own memory is closed to other processes (not dumpable).

Here: the process (its guards, the job in, the answer out); the grading itself is
autograder.judge_grading's.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from . import osguard
from .judge_grading import Grading
from .result import ProblemResult
from .session import Workers


def _read_job() -> dict | None:
    try:
        job = json.loads(sys.stdin.read())
    except ValueError:
        return None
    return job if isinstance(job, dict) else None


def _prepare_judge(device: str) -> None:
    """This process's own imports and CUDA context, ahead of the job when the judge was started ahead."""
    import torch

    from . import problems  # noqa: F401  (every act's problem definitions)

    if device == "cuda":
        torch.cuda.init()
        torch.zeros(1, device="cuda")


def main() -> None:
    """``python -m autograder._judge`` reads one job on stdin and grades it. With ``--standby WORKDIR
    DEVICE`` it starts its workers and imports first, then waits for the job (autograder.sandbox
    keeps one such judge ready between a notebook's gradings); if stdin closes with no job, it ends."""
    standby = sys.argv[1:2] == ["--standby"]
    caller = os.getppid()
    osguard.hide_memory()
    osguard.become_subreaper()
    # If the caller goes away (a notebook kernel restarted), end this grading and all it started.
    signal.signal(signal.SIGTERM, lambda *_: (osguard.kill_descendants(os.getpid()), os._exit(1)))
    osguard.die_with_parent(caller, signal.SIGTERM)
    os.environ["AUTOGRADER_GRADING"] = "judge"
    if standby:
        workdir, device = sys.argv[2], sys.argv[3]
        workers = Workers(workdir, device, helper=device == "cuda", warm_profiler=device == "cuda")
        _prepare_judge(device)
        job = _read_job()
        if job is None or job.get("workdir") != workdir or job.get("device") != device:
            osguard.kill_descendants(os.getpid())
            os._exit(0)
    else:
        job = json.loads(sys.stdin.read())
        workers = Workers(job["workdir"], job["device"], helper=bool(job.get("timed")), warm_profiler=job["device"] == "cuda" and job.get("kind") == "kernel")
    grading = None
    try:
        grading = Grading(job, workers)
        result = grading.run()
    except BaseException as exc:  # noqa: BLE001 -- the judge always answers
        result = grading.result if grading is not None else ProblemResult(problem=job.get("problem"))
        result.status, result.message = "ERROR", f"the grader failed: {type(exc).__name__}: {exc}"
    osguard.kill_descendants(os.getpid())
    if grading is not None:
        _remove(grading.shared_folder)
    try:
        from . import verdict

        answer = verdict.finish(job, result)
    except BaseException as exc:  # noqa: BLE001
        answer = {**result.to_dict(), "status": "ERROR", "message": f"the grader failed while scoring: {type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps({"nonce": job["nonce"], "result": answer}, default=str))
    sys.stdout.flush()
    os._exit(0)


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
