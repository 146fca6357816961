"""A benchmark row in physical units: bandwidth and FLOP/s, fractions of this GPU's measured copy
bandwidth and roofline, and whether its time is below the physical floor (autograder.verdict)."""

from __future__ import annotations

from .result import ProblemResult

# A time charged as zero (a window no longer than the switch between processes) is below any floor.
SHORTEST_S = 1e-12


def annotate(problem, result: ProblemResult) -> None:
    """Physical units and fractions of this GPU's ceilings for every benchmark row."""
    from . import timing

    entry = result.ceilings or {}
    if not entry:
        return
    copy_bw = float(entry["copy"]["bytes_per_s"])
    matmul = entry.get("matmul", {})
    peak = _peak(matmul, problem.compute_dtype)
    for row in result.speed:
        seconds = max(row.candidate.median_ms * 1e-3, SHORTEST_S)
        intensity = row.flops / row.bytes_moved if row.bytes_moved else float("inf")
        # The roofline's time for this work is the slower of moving its bytes and doing its FLOPs;
        # written as times it also holds for work with no FLOPs (a transpose) or no bytes.
        roofline_s = max(row.bytes_moved / copy_bw, row.flops / peak)
        row.size_label = problem.size_label(_size_value(row.size))
        row.copy_fraction = row.bandwidth / copy_bw
        row.flop_per_s = row.flops / seconds
        row.library_flop_per_s = row.flops / max(row.library.median_ms * 1e-3, SHORTEST_S)
        row.intensity = intensity
        row.peak_flop_per_s = peak
        row.roofline_fraction = roofline_s / seconds
        row.below_floor = row.candidate.median_ms < timing.FLOOR_SLACK * row.floor_ms
        for extra in (row.extra_libraries or {}).values():
            # An extra baseline charged nothing (its windows no longer than the switch between
            # processes) was not measured: it gets no ratio rather than an infinite one.
            if extra.median_ms > 0:
                extra.ratio = extra.median_ms * 1e-3 / seconds
                extra.flop_per_s = row.flops / (extra.median_ms * 1e-3)


def _peak(matmul: dict, dtype: str) -> float:
    if not matmul:
        return float("inf")
    from . import ceilings

    return ceilings.compute_peak({"matmul": matmul}, dtype)


def _size_value(size):
    """Sizes come back from the child as JSON: tuples as their repr."""
    if isinstance(size, str):
        import ast

        try:
            return ast.literal_eval(size)
        except (ValueError, SyntaxError):
            return size
    return size
