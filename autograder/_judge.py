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
from .session import Workers, fork_spares


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


def main(argv: list[str] | None = None, fork_workers: bool = False, spares: int = 0) -> None:
    """``python -m autograder._judge`` reads one job on stdin and grades it. With ``--standby WORKDIR
    DEVICE`` it starts its workers and imports first, then waits for the job (autograder.sandbox
    keeps one such judge ready between a notebook's gradings); if stdin closes with no job, it ends.
    With ``--template FD`` it is the template CPU gradings' judges are forked from (autograder.template);
    such a judge forks its workers (``fork_workers``) where a judge started ahead starts them, and
    ``spares`` more for the workers it may start after its job."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--template"]:
        from . import template

        template.serve(int(argv[1]), _prepare_template, forked)
    standby = argv[:1] == ["--standby"]
    caller = os.getppid()
    osguard.hide_memory()
    osguard.become_subreaper()
    # If the caller goes away (a notebook kernel restarted), end this grading and all it started.
    signal.signal(signal.SIGTERM, lambda *_: (osguard.kill_descendants(os.getpid()), os._exit(1)))
    osguard.die_with_parent(caller, signal.SIGTERM)
    os.environ["AUTOGRADER_GRADING"] = "judge"
    if standby:
        workdir, device = argv[1], argv[2]
        workers = Workers(workdir, device, helper=device == "cuda", warm_profiler=device == "cuda", fork=fork_workers)
        fork_spares(spares)
        _prepare_judge(device)
        job = _read_job()
        if job is None or job.get("workdir") != workdir or job.get("device") != device:
            osguard.kill_descendants(os.getpid())
            os._exit(0)
        # The caller's settings of the grader, which a worker's environment leaves out, arrive with the job.
        os.environ.update({k: str(v) for k, v in (job.get("env") or {}).items() if k.startswith("AUTOGRADER_")})
        os.environ["AUTOGRADER_GRADING"] = "judge"
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


def _prepare_template(kind: str | None = None) -> None:
    """What CPU judges and workers import, less the problem definitions: torch, Triton under its
    interpreter (as a CPU worker imports it; a CPU judge runs no Triton) and the grader's modules;
    for the first distributed or compile exercise, Dynamo too (their workers' dispatch mode and
    harness import it: a second each)."""
    import numpy  # noqa: F401
    import torch.autograd.profiler  # noqa: F401

    os.environ["TRITON_INTERPRET"] = "1"
    import triton  # noqa: F401

    from . import _worker, canary, checking, honesty, judging, shared, triton_frontend, verdict, watch, worker_calls  # noqa: F401

    # The workers compile each kernel they interpret with Triton's front end: its first-use costs once, here.
    triton_frontend.warm()

    if kind in ("distributed", "compiled"):
        import torch._dynamo  # noqa: F401


def forked(request: dict, fds: list[int]) -> None:
    """A judge the template forked (autograder.template), given its standard input, output and error:
    in a session of its own, with the caller's environment, as a judge started ahead of a CPU grading."""
    from . import template

    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        template.close_fds_but(())
        template.start_afresh(request["env"], request["workdir"])
        main(["--standby", request["workdir"], "cpu"], fork_workers=True, spares=int(request.get("spares", 0)))
    finally:
        os._exit(1)


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
