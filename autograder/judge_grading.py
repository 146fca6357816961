"""One grading, as the judge runs it: the learner's worker and the trusted helper configured, the
learner's code loaded, then the stages of the exercise's kind in turn (autograder.judging,
speedrows, answers, distributed, compiled, graphs), each filling in the result. The judge's process
(autograder._judge) makes one Grading per job."""

from __future__ import annotations

import os
import tempfile
import time

from . import learner_code, library_helper, shared
from .result import ProblemResult
from .session import Workers


class Grading:
    def __init__(self, job: dict, workers: Workers) -> None:
        self.job = job
        self.device = job["device"]
        self.deadline = time.monotonic() + float(job["timeout"])
        self.workdir = job["workdir"]
        self.shared_folder = tempfile.mkdtemp(prefix="shared-", dir=_shm_root())
        self.result = ProblemResult(problem=job["problem"], device=self.device)
        self.timer = None
        # Calls per timed window at each benchmark size (autograder.judging.KernelStages.plan_windows).
        self.windows: dict = {}
        # The one block of shared inputs for the whole grading: the workers keep what they mapped of
        # it, and memory freed under another process's mapping is undefined in CUDA's IPC, so the
        # inputs of the windows fitted at planning time and of every later stage lie in it.
        self.arena = shared.Arena()
        with open(job["module"], encoding="utf-8") as f:
            self.source = f.read()
        from . import registry

        self.problem = registry.get(job["problem"])
        # A distributed exercise's ranks, the learner's worker as rank 0, in a network of their own.
        self.network = None
        if self.device == "cuda" and getattr(self.problem, "predicts", False):
            workers.restart_learner("cpu")
        elif getattr(self.problem, "kind", None) == "distributed":
            from .netns import PrivateNetwork

            self.network = PrivateNetwork()
            self.result.extra["network"] = self.network.fact
            inside = self.network.env()
            if inside:
                workers.restart_learner(self.device, inside)
        self._helper_pid = workers.helper.process.pid if workers.helper is not None else None
        self.learner = self._configure(workers.learner, job["module"], job["entry"], job["language"])
        self.helper = None
        if job.get("timed") and job.get("kind", "kernel") == "kernel":
            self.helper = self._configure(workers.helper, self._write_helper(), "library_entry", "python")
        elif workers.helper is not None:
            workers.helper.end(spare=(workers.learner.process.pid,))
        if self.helper is not None:
            with open(self.helper.setup["module"], "w", encoding="utf-8") as f:
                f.write(library_helper.SOURCE.format(name=self.problem.name, names=self._argument_names()))
        self.phases: dict[str, dict] = {}
        self.own_kernels: set[str] = set()
        self.stopped = False
        self._last_stage = time.monotonic()

    def stage(self, name: str) -> None:
        """Seconds since the previous stage, kept in the result: where a grading's time goes."""
        now = time.monotonic()
        self.result.stage_took(name, now - self._last_stage)
        self._last_stage = now

    def remaining(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    def fail_hard(self, status: str, message: str, traceback: str | None = None) -> None:
        """A verdict that ends the grading (an error, a crash, a time-out)."""
        self.stopped = True
        self.result.status, self.result.message = status, message
        if traceback:
            self.result.traceback = traceback

    def watch(self, session, phase: str, action: str) -> dict:
        header, _ = session.ask({"op": "watch", "action": action}, timeout=self.remaining())
        if action == "stop" and session is self.learner:
            self.phases[phase] = header
        return header

    def select(self, session, entry: str) -> None:
        header, _ = session.ask({"op": "load", "module": session.setup["module"], "entry": entry, "arguments": []}, timeout=self.remaining())
        if not header.get("loaded"):
            raise RuntimeError(f"the library helper could not load {entry}: {header}")

    # -- the whole grading ----------------------------------------------------------------------------
    def run(self) -> ProblemResult:
        from .session import WorkerGone

        kind = self.problem.kind
        timed = bool(self.job.get("timed")) and kind == "kernel"
        from . import honesty

        self.own_kernels = honesty.own_kernel_names(self.source, self.device)
        kept = None
        try:
            if self.device == "cuda" and kind in ("kernel", "measured"):
                from . import ceilings

                self.result.ceilings = ceilings.measure_for(getattr(self.problem, "compute_dtype", "float32"), *getattr(self.problem, "ceiling_dtypes", ()))
                self.stage("ceilings")
            if timed:
                self._calibrate("before")
                self.stage("calibration")
            ready = self.learner.wait_ready()
            self.stage("worker started")
            self.result.versions, self.result.sandbox, self.result.channel = ready.get("versions"), ready.get("sandbox"), ready.get("channel")
            if ready.get("device_name"):
                self.result.device_name = ready["device_name"]
            # How the grader's processes are scheduled before any of the learner's code runs.
            kept = self._scheduling()
            if not self._load(kind):
                return self.result
            self.stage("learner's code loaded")
            from . import answers

            if kind == "exact":
                answers.grade_exact(self)
            elif kind == "measured":
                answers.grade_measured(self)
            elif kind == "distributed":
                from . import distributed_cases, distributed_speed

                distributed_cases.grade(self)
                distributed_speed.grade_speed(self)
            elif kind == "trace":
                answers.grade_traces(self)
            elif kind == "interactive":
                answers.grade_interactive(self)
            elif kind == "compiled":
                from . import compiled

                compiled.grade(self)
            elif kind == "memory":
                from . import memory_judge

                memory_judge.grade(self)
            elif kind == "graphed":
                from . import graphs

                graphs.grade(self)
            else:
                self._kernel(timed)
        except WorkerGone as gone:
            self.fail_hard(gone.status, str(gone))
        finally:
            for session in (self.learner, self.helper):
                if session is not None:
                    session.end()
            if self.network is not None:
                self.network.close()
            self._scheduling_kept(kept)
        return self.result

    def _scheduling(self) -> dict:
        from . import pinning

        helper = [self.helper.process.pid] if self.helper is not None else []
        return pinning.scheduling([os.getpid(), *helper, os.getppid()])

    def _scheduling_kept(self, kept: dict | None) -> None:
        """The learner's process may lower the priority of (or move) any process of its user, and the
        change outlives it, into the baselines timed once it is gone: such a grading is rejected, and
        the processes are put back where the system allows it."""
        from . import pinning

        moved = pinning.changed(kept) if kept else []
        if moved:
            pinning.restore(kept)
            self.fail_hard("REJECT", "your code changed how the grader's processes are scheduled on the CPUs (their nice value, policy "
                           "or cores: os.setpriority, os.sched_setaffinity or the like), which would slow down the baselines timed "
                           "after it: " + "; ".join(moved[:4]))

    def _configure(self, session, module: str, entry: str, language: str):
        role = session.setup["role"]
        folder = os.path.join(self.workdir, role)
        kernels = _kernel_cache(self.source) if role == "learner" else None
        setup = {
            "language": language, "module": module, "entry": entry, "problem": self.job["problem"], "kind": self.job.get("kind"),
            "writable": [folder, self.shared_folder, *([kernels] if kernels else []), *_device_files()],
            # Other submissions' compiled kernels (the reference solution's, if it was graded here).
            "hidden": ([os.path.dirname(kernels)] if kernels else []) + learner_code.course_files(os.environ.get(learner_code.COURSE_VARIABLE)) + learner_code.named_hidden(),
            # The judge's and the helper's threads, which no signal of the learner's may reach (autograder.seccomp).
            "protected": self._protected() if role == "learner" else [],
            # A distributed rank whose messages the judge carries has no network (autograder.relay).
            "network": not getattr(self.problem, "relay", False),
            "refused_language": list(getattr(self.problem, "refused_language", ())),
        }
        session.configure(setup, start_timeout=self.remaining(), kernel_cache=kernels)
        return session

    def _protected(self) -> list[int]:
        """Every thread of the judge and of the helper as they run now: a signal sent to one thread's
        id reaches its whole process."""
        from . import pinning

        helper = [self._helper_pid] if self._helper_pid else []
        return [*helper, *pinning.threads(os.getpid()), *(pinning.threads(helper[0]) if helper else [])]

    def _arguments(self) -> list[str]:
        return list(getattr(self.problem, "arguments", ()) or self._argument_names())

    def _argument_names(self) -> list[str]:
        from . import problem as problem_mod

        if problem_mod.is_exact(self.problem):
            return list(self.problem.make_cases(0)[0])
        if problem_mod.is_trace(self.problem) or problem_mod.is_interactive(self.problem):
            return list(self.problem.arguments)
        return list(self.problem.make_inputs(self.problem.test_sizes[0], 0, "cpu"))

    def _write_helper(self) -> str:
        """The trusted helper's module; its argument names are filled in before it is loaded."""
        return os.path.join(self.workdir, "library_helper.py")

    def _load(self, kind: str) -> bool:
        request = {"op": "load", "module": self.job["module"], "entry": self.job["entry"], "arguments": self._arguments(), "keywords": kind in ("exact", "trace", "interactive")}
        header, _ = self.learner.ask(request, timeout=self.remaining())
        if header.get("loaded"):
            return True
        error = header.get("error")
        if error and error.get("refused"):
            self.fail_hard("REJECT", error["message"])
        elif error:
            status = "COMPILE ERROR" if error.get("compile") else "ERROR"
            self.fail_hard(status, f"your code failed while being loaded: {error['type']}: {error['message']}", error.get("traceback"))
        else:
            self.fail_hard("ERROR", header.get("missing", "your code could not be loaded"))
        return False

    def pass_if_all(self, good: str, bad: str) -> None:
        if self.stopped:
            return
        passed = self.result.all_cases_passed
        self.result.status, self.result.message = ("PASS", good) if passed else ("FAIL", bad)

    def _kernel(self, timed: bool) -> None:
        from .judging import KernelStages

        stages = KernelStages(self)
        stages.correctness(timed)
        if not (timed and self.result.status == "PASS"):
            return
        from . import speedrows

        speedrows.measure(self, stages)

    def _calibrate(self, when: str) -> None:
        from . import crosstime
        from .judging import KernelStages

        if self.timer is None:
            self.timer = crosstime.CrossTimer()
        helper = self.helper
        helper.wait_ready()
        helper.ask({"op": "flags", "handle": self.timer.handle}, timeout=self.remaining())
        stages = KernelStages(self)
        raws = stages.null_calls()
        self.result.calibrated(when, sorted(r.window_us for r in raws)[len(raws) // 2])
        if when == "before":
            self.windows = stages.plan_windows()


def _kernel_cache(source: str) -> str:
    """Where the worker keeps the kernels it compiles from this exact submission text (under the names
    it compiles them with: Triton's cache keys leave the name out)."""
    import hashlib

    from .honesty import OWN_MARK

    root = os.environ.get("AUTOGRADER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpu-brrr")
    path = os.path.join(root, "kernels", hashlib.sha256((OWN_MARK + source).encode()).hexdigest()[:24])
    os.makedirs(path, exist_ok=True)
    return path


def _device_files() -> list[str]:
    """Device files a worker opens for writing: the GPU's and /dev/null."""
    import glob

    return ["/dev/null", "/dev/zero", *glob.glob("/dev/nvidia*"), *glob.glob("/dev/dri/*")]


def _shm_root() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
