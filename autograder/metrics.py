"""What a speed grade measures: each metric reads one value of a benchmark row and says how it is
written, so every report, table and target speaks of it the same way."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpeedMetric:
    """``name`` is how results and problem specs call it; ``row_key`` the benchmark row's value it
    reads; a ``fraction`` of a ceiling is written as a percentage, a ratio as "1.20x"."""

    name: str
    row_key: str
    fraction: bool
    unit: str

    def of(self, row: dict) -> float:
        return float(row.get(self.row_key, 0.0))

    def level(self, value: float) -> str:
        """A threshold or target on this metric: "75%", "0.90x"."""
        return f"{value:.0%}" if self.fraction else f"{value:.2f}x"

    def shown(self, value: float, library: str = "the library", digits: int = 0) -> str:
        """A measured value with its unit: "96% of copy bandwidth", "1.31x SDPA"."""
        return f"{value:.{digits}%} {self.unit}" if self.fraction else f"{value:.2f}x {library}"


# Achieved bandwidth over this GPU's measured copy bandwidth: memory-bound kernels.
COPY_FRACTION = SpeedMetric("copy_fraction", "copy_fraction", fraction=True, unit="of copy bandwidth")
# The library's time over the learner's, measured in the same grading: compute-bound kernels.
LIBRARY_RATIO = SpeedMetric("library_ratio", "ratio", fraction=False, unit="x the library")
# The roofline's time for the call's bytes and FLOPs over the learner's time.
ROOFLINE_FRACTION = SpeedMetric("roofline_fraction", "roofline_fraction", fraction=True, unit="of this GPU's roofline")

METRICS = {m.name: m for m in (COPY_FRACTION, LIBRARY_RATIO, ROOFLINE_FRACTION)}


def named(name: str) -> SpeedMetric:
    """The metric a result's ``speed_metric["name"]`` names."""
    return METRICS[name]
