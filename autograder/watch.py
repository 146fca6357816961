"""The worker's profiler, on for every call the judge makes (correctness cases and timed calls alike),
so the view of which kernels ran comes from the very calls that are timed and checked.

On a GPU it lists the kernels the calls launched with their GPU time; on a CPU, the PyTorch
operators run on any thread. The worker only reports; the judge decides what counts as the
learner's own work (autograder.honesty).
"""

from __future__ import annotations

import warnings

_MEMORY_OPS = ("Memcpy", "Memset", "cudaMemcpy", "cudaMemset")


class Watch:
    def __init__(self, device: str) -> None:
        self.device = device
        self._profile = None

    def start(self) -> None:
        if self.device == "cuda":
            from torch.profiler import ProfilerActivity, profile

            self._profile = profile(activities=[ProfilerActivity.CUDA], experimental_config=_all_threads(), acc_events=True)
        else:
            # On a CPU, the autograd profiler that torch.profiler.profile wraps, with the same
            # settings and events: the wrapper's first start imports torch._inductor, a second of
            # every CPU grading.
            from torch.autograd import profiler

            self._profile = profiler.profile(use_cpu=True, use_kineto=True, experimental_config=_all_threads(), acc_events=True)
        with warnings.catch_warnings():
            # The profiler's notes go to the learner's output, where they would read as theirs.
            warnings.simplefilter("ignore")
            self._profile.__enter__()

    def stop(self) -> dict:
        import torch
        from torch.autograd import DeviceType

        if self.device == "cuda":
            torch.cuda.synchronize()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._profile.__exit__(None, None, None)
        kernels: dict[str, dict] = {}
        memory_us = 0.0
        operators: set[str] = set()
        events = self._profile.events() if self.device == "cuda" else self._profile.function_events
        for event in events:
            if event.device_type == DeviceType.CUDA:
                duration = float(event.time_range.elapsed_us())
                if event.name.startswith(_MEMORY_OPS):
                    memory_us += duration
                    continue
                entry = kernels.setdefault(event.name, {"name": event.name, "calls": 0, "total_us": 0.0})
                entry["calls"] += 1
                entry["total_us"] += duration
            elif event.name.startswith("aten::"):
                operators.add(event.name)
        self._profile = None
        return {"kernels": sorted(kernels.values(), key=lambda k: -k["total_us"]), "memory_us": memory_us, "operators": sorted(operators)}


def _all_threads():
    """Operators run on threads the learner starts count too, where this torch can see them."""
    try:
        from torch._C._profiler import _ExperimentalConfig

        return _ExperimentalConfig(profile_all_threads=True)
    except (ImportError, TypeError):
        return None
