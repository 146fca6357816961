"""The worker's side of a timed window: the learner's calls of one window queued behind the judge's go
flag, and the done flag written once all their work has run (autograder.crosstime times the window
from the judge's side). Mixed into autograder._worker.Worker, whose ``flags``, ``inputs``, ``kept``,
``language``, ``setup`` and ``_entry`` it uses."""

from __future__ import annotations

from . import learner_code


class TimedCalls:
    def timed_calls(self, request: dict) -> tuple[dict, bytes]:
        """The calls of one timed window, each on its own inputs (``ids``), all queued behind the
        judge's go flag; ``serve`` writes the done flag once all their work has run. Every output
        stays allocated until the next window, so the judge reads, and may check, each of them."""
        import time

        import torch

        from . import arrays, cuda_driver, shared

        self.kept = []
        started = time.perf_counter()
        cuda_driver.wait_value(torch.cuda.current_stream(), self.flags + 0, request["gate"])
        fn = self._entry(request)
        batch = [self.inputs[inputs_id] for inputs_id in request["ids"]]
        for _, args in batch:
            try:
                raw = fn(*args)
            except BaseException as exc:  # noqa: BLE001 -- reported as this window's verdict
                return {"error": learner_code.error(exc, self.setup.get("module"))}, b""
            try:
                self.kept.append(arrays.from_learner(raw, self.language))
            except TypeError as exc:
                return {"wrong_type": str(exc)}, b""
        for out in self.kept:
            aliased = arrays.aliased_input(out, [tensors for tensors, _ in batch])
            if aliased:
                return {"aliases": aliased}, b""
        # What launching took on this side: shown beside the charge for diagnosis, never charged.
        launch_us = 1e6 * (time.perf_counter() - started)
        return {"outputs": [shared.describe_output(out)[0] for out in self.kept], "launch_us": launch_us}, b""

    def _done(self, gate: int) -> None:
        """The reply went first, so the judge can queue its read of the output while the GPU still
        works; the done flag follows all of the call's work, on every stream of this process."""
        import torch

        from . import cuda_driver

        torch.cuda.synchronize()
        cuda_driver.write_value(torch.cuda.current_stream(), self.flags + 4, gate)

    def _open_flags(self, request: dict) -> dict:
        from . import cuda_driver

        if self.flags is None:
            self.flags = cuda_driver.ipc_open(request["handle"])
        return {"flags": True}
