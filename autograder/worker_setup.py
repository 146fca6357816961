"""The worker's set-up, in the order the sandbox needs: the libraries every worker of a device uses,
then the submission's environment and its own libraries, then the sandbox, then the learner's module.
Mixed into autograder._worker.Worker, whose ``setup``, ``device``, ``language``, ``module``, ``fn``,
``arguments``, ``ops`` and ``harness`` it fills in."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys

from . import learner_code, noexec, osguard, versions


class WorkerSetup:
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

            if self.device == "cuda" and self.setup["role"] == "learner":
                # Triton's native modules built outside the sandbox, never loaded from a folder the
                # learner's code writes (autograder.launchers); started now, while no sandbox is on.
                from . import launchers

                differs = launchers.supported()
                if differs is None:
                    launchers.Builder().install()
                self.launchers = "Triton's launchers built outside your sandbox" if differs is None else f"files you write may be run ({differs})"

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
                    # The front end's first-use imports, before the sandbox closes (already paid in a forked worker).
                    from . import triton_frontend

                    triton_frontend.warm()
        if self.setup.get("kind") == "distributed":
            # torch.distributed and the first dispatch mode take seconds: every rank pays them now,
            # side by side, rather than the first time it joins a group while the others wait.
            from . import ranks

            ranks.warm()
        if self.setup.get("kind") == "memory":
            # The grader's model, built and warmed up from the judge's seed in the trusted worker
            # and the learner's alike, before anything is measured or refused.
            from . import memory_step, registry

            self.harness = memory_step.Harness(registry.get(self.setup["problem"]), self.setup.get("memory_seed"))
        if self.setup["role"] == "learner":
            if self.setup.get("kind") == "measured":
                # The operations to measure are the grader's, built before its modules are refused.
                from . import registry

                self.ops = registry.get(self.setup["problem"]).make_ops(self.device)
            if self.setup.get("kind") == "compiled":
                # The harness, with its own references to torch.compile and Dynamo's counters.
                from . import compiled

                compiled.capture()
                self.harness = compiled.run_stream
            if self.setup.get("kind") == "graphed":
                from . import graphs, registry

                self.harness = graphs.Harness(registry.get(self.setup["problem"]))
            if self.language == "triton" and self.setup.get("module"):
                from . import own_compile

                own_compile.install((self.setup["module"],), self.device, tuple(self.setup.get("refused_language", ())))
            learner_code.refuse_grader_imports()
            # A distributed exercise's ranks are sandboxed one by one, each in a Landlock domain of
            # its own, and NCCL passes its buffers between them over abstract UNIX sockets: those
            # ranks keep abstract sockets (they already share the loopback network); signals out of
            # the sandbox stay refused.
            own = [*self.setup["writable"], *([self.setup["module"]] if self.setup.get("module") else [])]
            hidden = learner_code.hidden_files() + list(self.setup.get("hidden", [])) + learner_code.other_gradings(own)
            readable = [os.path.dirname(self.setup["module"])] if self.setup.get("module") else []
            if self.unrunnable:
                # The folders it is given now (its kernel cache): noexec too, wherever they lie.
                self.unrunnable = noexec.cover(self.setup["writable"], self.unrunnable)
            confined = osguard.confine(self.setup["writable"], abstract_sockets=self.setup.get("kind") == "distributed" and self.setup.get("network", True), hidden=hidden, readable=readable)
            facts["sandbox"] = "; ".join(filter(None, (confined, osguard.drop_capabilities(), self.unrunnable, getattr(self, "launchers", None))))
            if self.setup.get("kind") == "memory":
                from . import memory_step

                facts["sealed"] = memory_step.seal()
            self._connect(facts)
            # Last, the seal: from here on the learner's code can neither reach the objects that
            # report on its calls nor replace them unseen (autograder.seal).
            from . import seal

            folders = [*self.setup.get("writable", []), *([os.path.dirname(self.setup["module"])] if self.setup.get("module") else [])]
            self.changed_by_learner = seal.seal(tuple(folders), self.device)
        else:
            self._connect(facts)
        return facts

    def _connect(self, facts: dict) -> None:
        """A timed rank's group, joined and connected (autograder.ranks.Bench.connect) inside the
        sandbox, so that NCCL's threads start in it, and before the channel's filter, while every
        thread's filters are still the same: the one refusing new connections then reaches them all."""
        if not self.setup.get("connect"):
            return
        from . import ranks

        self.bench = ranks.Bench()
        try:
            facts["connected"] = self.bench.connect(self.setup["connect"])
        except Exception as exc:  # noqa: BLE001 -- reported to the judge, which names the rank
            facts["connect_error"] = f"{type(exc).__name__}: {exc}"[:2000]

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
            self._returned()  # what its loading left in PyTorch (autograder.worker_calls)
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
