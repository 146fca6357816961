"""The worker's calls of the learner's code, each answering one request of the judge: a kernel on
shared inputs (a correctness case), a function on the judge's arguments answered as plain data, a
stateful object's script, or the grader's harness; and the profiler around them. Mixed into
autograder._worker.Worker, whose ``setup``, ``device``, ``language``, ``module``, ``fn``,
``arguments``, ``inputs``, ``object``, ``ops``, ``harness`` and ``watch`` it uses."""

from __future__ import annotations

import contextlib
import time

from . import jsonable, learner_code


class WorkerCalls:
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
        self.replayable, self.kept = None, []
        guard = canary.Guard(self.language, self.device, request.get("out_numel", 0), request.get("out_dtype")) if request.get("canary") else None
        recording = self._recording()
        record = None
        started = time.monotonic()
        try:
            with guard or contextlib.nullcontext():
                entered = time.monotonic()
                if recording is None:
                    raw = self._entry(request)(*args)
                else:
                    raw, record = recording(self._entry(request), *args, check=self.changed_by_learner)
                returned = time.monotonic()
                self._returned()
                if guard is not None:
                    # The call's kernels may still be running: a fault of theirs (an illegal
                    # address, a trap) surfaces here, and is the learner's, not the grader's.
                    guard.settle()
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
            facts["past_end"] = bool(guard.wrote_past_the_end(out))
        # Where the worker's side of a call goes (reported, never used for a grade).
        facts["worker_seconds"] = {"before": round(entered - started, 4), "function": round(returned - entered, 4), "after": round(time.monotonic() - returned, 4)}
        if record is not None:
            from .launch_record import LaunchSummary

            facts["cpu_kernels"] = LaunchSummary(record).summary(out, self.setup.get("module"), tensors)
            self.replayable = (request["id"], out, record)
        meta, payload = shared.describe_output(out)
        # Held until the next call, as a timed window's are: its memory stays allocated until the judge has read it.
        self.kept = [out]
        return {"output": meta, **facts}, payload

    def replay(self, request: dict) -> tuple[dict, bytes]:
        """The launches of the last correctness call again, on the inputs ``with`` in place of its
        own (``whole``: autograder.replay's second reading), and what its output holds then."""
        from . import interpreter, shared

        kept = self.replayable
        if kept is None or kept[0] != request["id"] or request["with"] not in self.inputs:
            return {"replayed": False}, b""
        _, out, record = kept
        if record.replay.unfollowed:
            return {"unfollowed": record.replay.unfollowed}, b""
        try:
            # Recorded as any call is: each launch is checked against its tensors' bounds again.
            _, again = interpreter.run_recorded(record.replay.run, self.inputs[request["id"]][0], self.inputs[request["with"]][0], bool(request.get("whole")), replaying=record.replay)
        except BaseException as exc:  # noqa: BLE001 -- the kernels' own failure, reported as the replay's
            return {"error": learner_code.error(exc, self.setup.get("module"))}, b""
        self._returned()
        if again.compile_errors:
            # The replayed kernels are not what the call's were: refused by the front end or rewritten.
            kernel, reason = next(iter(again.compile_errors.items()))
            return {"changed": f"{kernel.name} was not what your call ran: {reason}"}, b""
        if record.replay.tampered:
            # Memory of the kernels changed by other code while they were replayed: a thread, a hook.
            return {"changed": record.replay.tampered}, b""
        meta, payload = shared.describe_output(out)
        if not again.written_by_kernels(out)[1]:
            # Changed after the replayed kernels stored it: by a thread of the learner's code.
            return {"changed": "the output changed after the kernels stored it"}, b""
        return {"output": meta}, payload

    def _entry(self, request: dict):
        # The helper's calls may name another of its entries (its null call between two timed calls
        # of the library); a learner's worker is only ever sent calls of the function it loaded.
        if "entry" in request and self.setup["role"] == "library":
            return getattr(self.module, request["entry"])
        return self.fn

    def _returned(self) -> None:
        """On a CPU, where the worker handles the output with PyTorch's operators: the seal's check,
        operators' kernels included, as the learner's code hands back control and before the worker
        touches what it returned. A hook that removes itself once it has run (a mode that exits, a
        kernel deregistered) is seen here, not only before the reply (autograder.torch_hooks)."""
        if self.device == "cpu" and self.changed_by_learner is not None:
            self.changed_by_learner(True)

    def _recording(self):
        """interpreter.run_recorded where the learner's Triton kernels are interpreted, else None."""
        if self.device == "cpu" and self.language == "triton" and self.setup["role"] == "learner":
            from . import interpreter

            return interpreter.run_recorded
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
        # Spelled out, not imported from autograder.measured: that module is refused in this process
        # once the learner's code is loaded (autograder.learner_code).
        available = {"op": op.call, "step": op.call, "op_doubled": op.doubled, "operation": op.operation, **scalars}
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
