"""The worker: the only process that runs the learner's code (or, as the judge's trusted helper, the
library's). ``python -m autograder._worker IN_FD OUT_FD JUDGE_PID``.

It holds the learner's module, the inputs the judge shares with it and nothing else: no reference,
no tolerance, no ceiling, no timer that counts. It calls the learner's function when asked and
answers with where the output is (or the answer itself, as plain data) and facts about the call
(which kernels ran, whether a canary was overwritten). The judge decides everything from those
and from what it measured itself.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
import sys
import time
import traceback

from . import jsonable, learner_code, osguard, versions, wire
from .worker_timed import TimedCalls


class Worker(TimedCalls):
    def __init__(self, setup: dict, out_fd: int) -> None:
        self.setup, self.out_fd = setup, out_fd
        self.device, self.language = setup["device"], setup.get("language")
        self.fn = None
        self.module = None
        self.arguments: list[str] = []
        self.inputs: dict[int, tuple[dict, list]] = {}
        self.watch = None
        self.flags = None
        self.kept: list = []
        self.ops = None
        self.object = None
        self.harness = None
        self.pid = os.getpid()

    def reply(self, header: dict, payload: bytes = b"") -> None:
        if os.getpid() != self.pid:
            # A process the learner's code forked came back here: only the worker answers the judge.
            os._exit(0)
        sys.stdout.flush()
        wire.send(self.out_fd, header, payload)

    # -- set-up: libraries first, then the sandbox, then the learner's code -------------------------
    def warm(self) -> None:
        """What every worker of this device needs, done before it knows what it will run: a worker
        started ahead of a grading has it ready when the grading comes."""
        import torch

        if self.device == "cuda":
            torch.cuda.init()
            torch.cuda.current_stream()
        if not self.setup.get("no_triton"):
            # A distributed exercise's further ranks run Python only, and start faster without it.
            import triton  # noqa: F401  (imported before the sandbox closes)

        if self.device == "cuda" and self.setup.get("warm_profiler"):
            # The profiler's first start takes seconds (CUPTI's set-up): paid here rather than in
            # the first correctness case.
            from .watch import Watch

            warm = Watch(self.device)
            warm.start()
            warm.stop()

    def configure(self, setup: dict) -> None:
        """The submission's set-up: its environment first, so that caches and the interpreter follow it."""
        self.setup = setup
        self.language = setup["language"]
        for name, value in setup.get("env", {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def start(self) -> dict:
        import torch

        facts = {"versions": versions.installed(("torch", "triton", "cupy"))}
        if torch.cuda.is_available():
            facts["versions"]["cuda"] = torch.version.cuda
        if self.device == "cuda":
            facts["device_name"] = torch.cuda.get_device_name(0)
        if self.language == "cupy":
            import cupy

            cupy.cuda.Device(0).use()
        if self.language == "triton":
            import triton  # noqa: F401  (compiled or interpreted before the sandbox closes)

            from . import interpreter

            if os.environ.get("TRITON_INTERPRET") == "1":
                # The interpreter's tl.dot is wrong for bfloat16 without this fix.
                interpreter.patch_bf16_dot()
                guard = getattr(interpreter, "install_guard", None)
                if guard is not None:
                    guard()
        if self.setup.get("kind") == "distributed":
            # torch.distributed and the first dispatch mode take seconds: every rank pays them now,
            # side by side, rather than the first time it joins a group while the others wait.
            from . import ranks

            ranks.warm()
        if self.setup["role"] == "learner":
            if self.setup.get("kind") == "measured":
                # The operations to measure are the grader's, built before its modules are refused.
                from . import registry

                self.ops = registry.get(self.setup["problem"]).make_ops(self.device)
            if self.setup.get("kind") == "compiled":
                # The harness, with its own references to torch.compile and Dynamo's counters.
                from . import compiled

                self.harness = compiled.run_stream
            if self.setup.get("kind") == "graphed":
                from . import graphs, registry

                self.harness = graphs.Harness(registry.get(self.setup["problem"]))
            learner_code.refuse_grader_imports()
            facts["ptrace_dropped"] = osguard.drop_ptrace()
            # A distributed exercise's ranks are sandboxed one by one, each in a Landlock domain of
            # its own, and NCCL passes its buffers between them over abstract UNIX sockets: those
            # ranks keep abstract sockets (they already share the loopback network); signals out of
            # the sandbox stay refused.
            facts["sandbox"] = osguard.confine(self.setup["writable"], abstract_sockets=self.setup.get("kind") == "distributed")
        return facts

    def load(self, request: dict) -> dict:
        path, entry = request["module"], request["entry"]
        if self.module is None:
            spec = importlib.util.spec_from_file_location("learner_submission", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["learner_submission"] = module
            try:
                spec.loader.exec_module(module)
            except BaseException as exc:  # noqa: BLE001 -- a failure while loading is the learner's verdict
                return {"error": learner_code.error(exc, path), "while": "loading"}
            self.module = module
        fn = getattr(self.module, entry, None)
        if not callable(fn):
            return {"missing": f"no function named {entry!r} was found in your code"}
        names = request["arguments"]
        try:
            signature = inspect.signature(fn)
            signature.bind(**dict.fromkeys(names)) if request.get("keywords") else signature.bind(*names)
        except TypeError:
            return {"missing": f"{entry} must take {len(names)} arguments ({', '.join(names)}); yours is {entry}{inspect.signature(fn)}"}
        except ValueError:
            pass
        self.fn = fn
        self.arguments = names
        return {"loaded": True}

    # -- calls ---------------------------------------------------------------------------------------
    def open_inputs(self, request: dict) -> dict:
        from . import arrays, shared

        tensors = shared.open_inputs(request["inputs"], self.device)
        self.inputs[request["id"]] = (tensors, [arrays.to_learner(v, self.language) for v in tensors.values()])
        return {"opened": True}

    def call(self, request: dict) -> tuple[dict, bytes]:
        """One call of the learner's function on shared inputs (a correctness case), or, with
        ``gate``, the calls of one timed window."""
        from . import arrays, canary, shared

        if request.get("gate") is not None:
            return self.timed_calls(request)
        tensors, args = self.inputs[request["id"]]
        guard = canary.Guard(self.language, self.device, request.get("out_numel", 0), request.get("out_dtype")) if request.get("canary") else None
        record = self._record_launches()
        started = time.monotonic()
        try:
            with guard or contextlib.nullcontext(), record or contextlib.nullcontext():
                entered = time.monotonic()
                raw = self._entry(request)(*args)
                returned = time.monotonic()
        except BaseException as exc:  # noqa: BLE001 -- reported as this call's verdict
            return {"error": learner_code.error(exc, self.setup.get("module"))}, b""
        try:
            out = arrays.from_learner(raw, self.language)
        except TypeError as exc:
            return {"wrong_type": str(exc)}, b""
        aliased = arrays.aliased_input(out, [tensors])
        if aliased:
            return {"aliases": aliased}, b""
        facts = {}
        if guard is not None:
            guard.settle()
            facts["past_end"] = bool(guard.wrote_past_the_end(out))
        # Where the worker's side of a call goes (reported, never used for a grade).
        facts["worker_seconds"] = {"before": round(entered - started, 4), "function": round(returned - entered, 4), "after": round(time.monotonic() - returned, 4)}
        if record is not None:
            facts["cpu_kernels"] = record.summary(out, self.setup.get("module"))
        meta, payload = shared.describe_output(out)
        return {"output": meta, **facts}, payload

    def _entry(self, request: dict):
        # The helper's calls may name another of its entries (its null call between two timed calls
        # of the library); a learner's worker is only ever sent calls of the function it loaded.
        if "entry" in request and self.setup["role"] == "library":
            return getattr(self.module, request["entry"])
        return self.fn

    def _record_launches(self):
        if self.device == "cpu" and self.language == "triton" and self.setup["role"] == "learner":
            from . import interpreter
            from .launch_record import LaunchSummary

            return LaunchSummary(interpreter.record_launches())
        return None

    def answer(self, request: dict, payload: bytes) -> tuple[dict, bytes]:
        """An exact or measured exercise: the learner's function on the judge's arguments, its
        answer returned as plain data (the bytes of any tensors in it beside the header)."""
        import pickle

        kwargs = pickle.loads(payload)
        if request.get("measured_op") is not None:
            kwargs = self._measured_arguments(request["measured_op"], kwargs)
        try:
            got = self.fn(**kwargs) if request.get("keywords") else self.fn(*kwargs.values())
        except BaseException as exc:  # noqa: BLE001
            return {"error": learner_code.error(exc, self.setup.get("module"))}, b""
        blobs: list[bytes] = []
        try:
            return {"answer": jsonable.encode(got, blobs=blobs)}, b"".join(blobs)
        except jsonable.NotPlainData as exc:
            return {"wrong_type": f"your function returned {exc}"}, b""

    def script(self, request: dict) -> dict:
        """A trace of a stateful exercise: a fresh object of the learner's class (or, without
        ``constructor``, the one the previous script built), then each call in order; every result as
        plain data. The first exception or unreadable result ends the trace (``at`` is its call, -1
        for the constructor), with the answers before it."""
        if "constructor" in request:
            self.object = None
            try:
                self.object = self.fn(**request["constructor"])
            except BaseException as exc:  # noqa: BLE001
                return {"answers": [], "at": -1, "error": learner_code.error(exc, self.setup.get("module"))}
        obj = self.object
        answers = []
        for index, (method, kwargs) in enumerate(request["calls"]):
            try:
                got = getattr(obj, method)(**kwargs)
            except BaseException as exc:  # noqa: BLE001
                return {"answers": answers, "at": index, "error": learner_code.error(exc, self.setup.get("module"))}
            try:
                answers.append(jsonable.encode(got))
            except jsonable.NotPlainData as exc:
                return {"answers": answers, "at": index, "wrong_type": f"returned {exc}"}
        return {"answers": answers}

    def run_harness(self, request: dict, payload: bytes) -> tuple[dict, bytes]:
        """A compiled or graphed exercise: the grader's harness calls the learner's functions."""
        return self.harness(self.module, self.setup["entry"], request, payload, self.device, lambda exc: learner_code.error(exc, self.setup.get("module")))

    def _measured_arguments(self, index: int, scalars: dict) -> dict:
        op = self.ops[index]
        available = {"op": op.call, "step": op.call, "op_doubled": op.doubled, **scalars}
        return {name: available[name] for name in self.arguments}

    def watch_kernels(self, request: dict) -> dict:
        from . import watch

        if request["action"] == "start":
            self.watch = watch.Watch(self.device)
            self.watch.start()
            return {"watching": True}
        seen = self.watch.stop() if self.watch else {}
        self.watch = None
        return seen

    def serve(self, in_fd: int) -> None:
        handlers = {
            "load": lambda r, p: (self.load(r), b""),
            "inputs": lambda r, p: (self.open_inputs(r), b""),
            "drop": lambda r, p: ({"dropped": self.inputs.pop(r["id"], None) is not None}, b""),
            "call": lambda r, p: self.call(r),
            "answer": self.answer,
            "script": lambda r, p: (self.script(r), b""),
            "watch": lambda r, p: (self.watch_kernels(r), b""),
            "harness": self.run_harness,
            "flags": lambda r, p: (self._open_flags(r), b""),
            # One rank of a distributed exercise (autograder.ranks, judged by autograder.distributed_cases).
            "rank_call": lambda r, p: self._ranks().call(self, r, p),
            "rank_leave": lambda r, p: (self._ranks().leave(), b""),
            "rank_arm": lambda r, p: (self._bench().arm(self, r), b""),
            "rank_go": lambda r, p: (self._bench().go(self), b""),
            "rank_output": lambda r, p: self._bench().output(r),
            "rank_close": lambda r, p: (self._bench().close(), b""),
        }
        while True:
            if os.getpid() != self.pid:
                os._exit(0)
            request, payload = wire.receive(in_fd)
            if request["op"] == "quit":
                return
            try:
                header, data = handlers[request["op"]](request, payload)
            except Exception:  # noqa: BLE001 -- the grader's own failure here, reported as such
                traceback.print_exc()
                header, data = {"worker_error": traceback.format_exc()[-3000:]}, b""
            self.reply(header, data)
            if request.get("gate") is not None:
                self._done(request["gate"])

    def _ranks(self):
        from . import ranks

        return ranks

    def _bench(self):
        if getattr(self, "bench", None) is None:
            self.bench = self._ranks().Bench()
        return self.bench


def main() -> None:
    in_fd, out_fd, judge_pid = (int(a) for a in sys.argv[1:4])
    osguard.die_with_parent(judge_pid)
    # A process the learner's code forks never reads the judge's requests or writes replies.
    os.register_at_fork(after_in_child=lambda: [_close(fd) for fd in (in_fd, out_fd)])
    base, _ = wire.receive(in_fd)
    worker = Worker(base, out_fd)
    try:
        worker.warm()
        setup, _ = wire.receive(in_fd)
        worker.configure(setup)
        worker.reply({"ready": worker.start()})
        worker.serve(in_fd)
    except wire.WireError:
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # Learner code may have left threads or GPU work behind; leave without waiting for them.
        os._exit(0)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


if __name__ == "__main__":
    main()
