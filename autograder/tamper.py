"""Functions a submission must not replace: the timers, the comparisons and the grader's own code.

The grader calls the originals it captured at import, so a patch changes no number; a patch is still
a sign of a cheat, and the verdict says so.
"""

from __future__ import annotations

import time

import torch


def _watched() -> dict:
    from . import arrays, checking, honesty, timing

    targets = {
        "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time"),
        "torch.cuda.Event.record": (torch.cuda.Event, "record"),
        "torch.cuda.Event.synchronize": (torch.cuda.Event, "synchronize"),
        "torch.cuda.synchronize": (torch.cuda, "synchronize"),
        "torch.cuda._sleep": (torch.cuda, "_sleep"),
        "torch.Tensor.zero_": (torch.Tensor, "zero_"),
        "torch.allclose": (torch, "allclose"),
        "torch.equal": (torch, "equal"),
        "torch.testing.assert_close": (torch.testing, "assert_close"),
        "time.perf_counter": (time, "perf_counter"),
        "time.time": (time, "time"),
    }
    for module in (arrays, checking, honesty, timing):
        for name, value in vars(module).items():
            if callable(value) and getattr(value, "__module__", None) == module.__name__:
                targets[f"{module.__name__}.{name}"] = (module, name)
    return targets


class Snapshot:
    def __init__(self) -> None:
        self._targets = _watched()
        self._ids = {label: id(getattr(owner, attr, None)) for label, (owner, attr) in self._targets.items()}

    def changed(self) -> list[str]:
        return sorted(
            label for label, (owner, attr) in self._targets.items() if id(getattr(owner, attr, None)) != self._ids[label]
        )
