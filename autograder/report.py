"""What the learner sees: a per-case table, a per-size speed table in physical units, and a roofline
with their kernel beside the library's."""

from __future__ import annotations

import io

from . import metrics
from .result import CaseResult, Exercise, ProblemResult, SpeedRow


def _size(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _fmt_bw(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:,.0f} GB/s"


def _points(count: float) -> str:
    return "point" if count == 1 else "points"


def library_label(result: ProblemResult) -> str:
    """The name of the baseline that was timed: the label the grading process recorded from
    ``problem.baseline_for(device)`` where it ran (result.baseline), else the problem's default."""
    exercise = _exercise(result)
    return (result.baseline.label if result.baseline else "") or exercise.library_name


def _exercise(result: ProblemResult) -> Exercise:
    """What the verdict wrote about the exercise (a result that was never scored has only its name)."""
    if result.exercise is not None:
        return result.exercise
    return Exercise(name=result.problem, title=result.title or result.problem, correctness_points=0.0, speed_points=0.0, speed_graded=False)


def text(result: dict | ProblemResult, part: str = "all") -> str:
    """The report of one exercise; ``part`` is "correctness", "speed" or "all"."""
    result = ProblemResult.from_dict(result) if isinstance(result, dict) else result
    exercise = _exercise(result)
    earned, out_of = {
        "all": (result.points or 0, exercise.max_points),
        "correctness": (result.correctness_points or 0, exercise.correctness_points),
        "speed": (result.speed_points or 0, exercise.speed_points),
    }[part]
    heading = {"all": "", "correctness": " correctness", "speed": " speed"}[part]
    status = result.status
    if part == "speed" and status == "PASS" and result.device != "cuda" and "speed_fraction" not in result.extra:
        # A correct kernel graded on a CPU has no speed verdict: its speed was never measured.
        status = "NEEDS GPU"
    lines = [f"{exercise.name} - {exercise.title}{heading}: {status}, {earned:.2f} / {out_of:g} {_points(out_of)}"]
    if result.message:
        lines.append(f"  {result.message}")
    where = result.device_name or ("CPU, Triton interpreter" if result.device == "cpu" else "")
    cases = result.cases if part != "speed" else []
    if cases:
        lines.append("")
        lines.extend(_case_lines(result, exercise, cases, where))
    lines.append("")
    speed = result.speed if part != "correctness" else []
    if speed and speed[0].annotated:
        lines.extend(_speed_lines(result, exercise, speed))
        if result.baseline and result.baseline.note:
            lines.append(f"  {result.baseline.note}")
    elif result.speed_note and part != "correctness":
        lines.append(f"Speed: {result.speed_note}")
    if result.honesty:
        lines.append(f"  {result.honesty.message}")
    if isinstance(result.sandbox, str) and result.sandbox.startswith("no filesystem sandbox"):
        lines.append(f"  note: {result.sandbox}: the grader's files were not kept from your code here")
    if isinstance(result.sandbox, str) and "capabilities still held" in result.sandbox:
        lines.append("  note: your code ran with root's capabilities here; the GPU's clocks and power limit were not kept from it")
    if isinstance(result.channel, str) and result.channel.startswith("no system call filter"):
        lines.append(f"  note: {result.channel}")
    if str(getattr(result, "extra", {}).get("network", "")).startswith("the ranks keep"):
        lines.append(f"  note: {result.extra['network']}")
    if result.traceback and result.status != "PASS":
        lines.append("")
        lines.append("Traceback (from your code):")
        lines.extend("  " + line for line in result.traceback.rstrip().splitlines())
    output = (result.output or "").strip()
    if output and result.status != "PASS":
        lines.append("")
        lines.append("Output of your code while grading:")
        lines.extend("  " + line for line in output.splitlines()[-40:])
    return "\n".join(lines)


def _case_lines(result: ProblemResult, exercise: Exercise, cases: list[CaseResult], where: str) -> list[str]:
    """The correctness cases: a line each with the error and what was allowed (kernels), or the
    answer's verdict and what was wrong with it (Python exercises)."""
    passed = sum(1 for c in cases if c.passed)
    lines = [f"Correctness ({result.correctness_points or 0:g} / {exercise.correctness_points:g}): {passed} of {len(cases)} cases correct" + (f" on {where}" if where else "")]
    if not exercise.speed_graded:
        for case in cases:
            lines.append(f"  {'ok   ' if case.passed else 'WRONG'}  {case.size}")
            if case.message:
                lines.append(f"         {case.message}")
        return lines
    lines.append(f"  {'size':>12}  {'result':<6}  {'max error':>10}  {'allowed':>10}  note")
    for case in cases:
        err, allowed = case.max_error, case.allowed_error
        lines.append(
            f"  {_size(case.size):>12}  {'ok' if case.passed else 'WRONG':<6}  "
            f"{'' if err is None else f'{err:.2e}':>10}  {'' if allowed is None else f'{allowed:.2e}':>10}  {case.message}"
        )
        for m in case.mismatches or []:
            lines.append(f"      at {tuple(m['index'])}: got {m['got']:.6g}, expected {m['expected']:.6g} (allowed error {m['allowed_error']:.2e})")
    return lines


def peak_name(ceilings: dict, dtype: str) -> str:
    """Which measured matmul ceiling caps work of ``dtype`` on this GPU, said as it is: a GPU without
    a ceiling of that dtype (bf16 on a T4) is capped by another one, and the report names that one."""
    from . import ceilings as ceilings_mod

    matmul = ceilings.get("matmul", {})
    if dtype in matmul or not matmul:
        return dtype
    peak = ceilings_mod.compute_peak(ceilings, dtype)
    used = next((name for name, m in matmul.items() if float(m["flop_per_s"]) == peak), "float32")
    return f"{used} (no {dtype} ceiling on this GPU)"


def _fmt_flops(flop_per_s: float) -> str:
    return f"{flop_per_s / 1e12:,.1f} TFLOP/s"


def _speed_lines(result: ProblemResult, exercise: Exercise, speed: list[SpeedRow]) -> list[str]:
    """Per benchmark size: time, the physical rate (GB/s for a memory-bound task, TFLOP/s for a
    compute-bound one), its fraction of this GPU's ceiling and roofline, and the library's time."""
    library = library_label(result)
    headline = ""
    if result.speed_metric is not None:
        headline = metrics.named(result.speed_metric.name).shown(result.speed_metric.value, library)
    lines = [f"Speed ({result.speed_points or 0:g} / {exercise.speed_points:g}): {headline} ({exercise.scale_text})"]
    ceilings = result.ceilings or {}
    copy = ceilings.get("copy", {}).get("bytes_per_s")
    first = speed[0]
    compute_bound = exercise.metric_name == metrics.LIBRARY_RATIO.name and (first.intensity or 0) * (copy or 0) > (first.peak_flop_per_s or float("inf")) * 0.5
    if copy:
        lines.append(f"  this GPU's measured copy bandwidth: {_fmt_bw(copy)}")
    if compute_bound and first.peak_flop_per_s:
        lines.append(f"  this GPU's measured {peak_name(ceilings, exercise.compute_dtype)} matmul rate: {_fmt_flops(first.peak_flop_per_s)}")
    rate_name, ceiling_name = ("TFLOP/s", "of peak") if compute_bound else ("bandwidth", "of copy")
    extras = list((first.extra_libraries or {}).keys())
    header = f"  {'size':>14}  {'yours (ms)':>17}  {rate_name:>13}  {ceiling_name:>7}  {'of roofline':>11}  {library + ' (ms)':>16}  {'ratio':>6}"
    for name in extras:
        header += f"  {name + ' (ms)':>16}  {'ratio':>6}"
    lines.append(header)
    for row in speed:
        c, lib = row.candidate, row.library
        if compute_bound:
            rate, fraction = _fmt_flops(row.flop_per_s), row.flop_per_s / row.peak_flop_per_s
        else:
            rate, fraction = _fmt_bw(row.bandwidth), row.copy_fraction
        line = (
            f"  {row.label:>14}  {c.median_ms:>8.4f} ± {c.stderr_ms:.4f}  {rate:>13}  "
            f"{fraction:>7.0%}  {row.roofline_fraction:>11.0%}  {lib.median_ms:>16.4f}  {row.ratio:>5.2f}x"
        )
        for name in extras:
            extra = row.extra_libraries[name]
            line += f"  {extra.median_ms:>16.4f}  {extra.ratio if extra.ratio is not None else float('nan'):>5.2f}x"
        lines.append(line)
    batched = max(row.calls_per_window or 1 for row in speed)
    windows = f"windows of up to {batched} calls back to back (each time is a window's share per call)" if batched > 1 else "calls"
    lines.append(f"  median of {first.candidate.calls}+ {windows} per size, every call on fresh inputs and its output checked; L2 flushed before each window")
    return lines


def roofline_png(result: dict | ProblemResult) -> bytes | None:
    """The learner's kernel and the library's on this GPU's measured roofline, as PNG bytes."""
    result = ProblemResult.from_dict(result) if isinstance(result, dict) else result
    speed = result.speed
    ceilings = result.ceilings
    if not speed or not ceilings or speed[0].intensity is None:
        return None
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    exercise = _exercise(result)
    copy_bw = ceilings["copy"]["bytes_per_s"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    library = library_label(result)
    if all(row.flops == 0 for row in speed):
        _bandwidth_chart(ax, exercise, [row.to_dict() for row in speed], copy_bw, library)
    else:
        _roofline_chart(ax, exercise, [row.to_dict() for row in speed], ceilings, library)
    ax.set_title(f"{exercise.title} on {result.device_name or 'this GPU'}", fontsize=10)
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def _bandwidth_chart(ax, problem, speed: list, copy_bw: float, library: str) -> None:
    """Work with no FLOPs (a transpose, a copy) has no place on a roofline's intensity axis: its
    only roof is the copy bandwidth, so it is drawn as bandwidth per benchmark size. ``problem``
    labels the sizes and names the compute dtype (an Exercise, or the Problem itself)."""
    labels = [row.get("size_label") or problem.size_label(row["size"]) for row in speed]
    positions = range(len(speed))
    ax.axhline(copy_bw / 1e9, color="k", lw=1.5, label=f"copy bandwidth {copy_bw / 1e9:,.0f} GB/s")
    ax.plot(positions, [row["bandwidth"] / 1e9 for row in speed], "o", color="tab:orange", ms=8, label="your kernel")
    ax.plot(positions, [row["library_bandwidth"] / 1e9 for row in speed], "s", color="tab:blue", ms=7, mfc="none", label=library)
    ax.set_xticks(list(positions), labels, fontsize=8)
    ax.set_xlim(-0.5, len(speed) - 0.5)
    ax.set_ylim(0, 1.15 * max(copy_bw / 1e9, *(row["bandwidth"] / 1e9 for row in speed)))
    ax.set_xlabel("benchmark size")
    ax.set_ylabel("GB/s (minimum bytes moved / time)")
    ax.grid(True, axis="y", alpha=0.2)
    ax.legend(fontsize=8, loc="lower right")


# One colour and dash pattern per dtype: bfloat16 and float16 peaks are often within a few percent of
# each other, so their lines lie on top of each other and only colour and dashes tell them apart.
PEAK_STYLES = {
    "float32": ("0.2", "-"),
    "tf32": ("0.45", ":"),
    "bfloat16": ("tab:green", (0, (6, 3))),
    "float16": ("tab:purple", (3, (2, 4))),
    "float8_e4m3fn": ("tab:red", "-."),
}


def _roofline_chart(ax, problem, speed: list, ceilings: dict, library: str) -> None:
    copy_bw = ceilings["copy"]["bytes_per_s"]
    xs = roofline_grid(ceilings, [row["intensity"] for row in speed])
    ax.loglog(xs, [copy_bw * x for x in xs], color="0.5", lw=1)
    from . import ceilings as ceilings_mod

    for dtype, (color, dashes) in PEAK_STYLES.items():
        if dtype in ceilings.get("matmul", {}):
            peak = ceilings["matmul"][dtype]["flop_per_s"]
            ridge = peak / copy_bw
            ax.loglog([ridge, xs[-1]], [peak, peak], color=color, linestyle=dashes, lw=1.2, label=f"{dtype} matmul peak {peak / 1e12:,.0f} TFLOP/s")
    roof = ceilings_mod.compute_peak(ceilings, problem.compute_dtype)
    ax.loglog(xs, [min(copy_bw * x, roof) for x in xs], "k-", lw=1.5, label=f"copy bandwidth {copy_bw / 1e9:,.0f} GB/s")
    for row in speed:
        ax.loglog(row["intensity"], row["flop_per_s"], "o", color="tab:orange", ms=8)
        ax.loglog(row["intensity"], row["library_flop_per_s"], "s", color="tab:blue", ms=7, mfc="none")
    ax.plot([], [], "o", color="tab:orange", label="your kernel")
    ax.plot([], [], "s", color="tab:blue", mfc="none", label=library)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("FLOP/s")
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8, loc="lower right")


def roofline_grid(ceilings: dict, intensities: list[float]) -> list[float]:
    """Intensities to draw the roofline at: powers of two spanning the measured points and every
    ridge point, with the ridge points themselves included so each corner is drawn exactly."""
    import math

    copy_bw = ceilings["copy"]["bytes_per_s"]
    ridges = [m["flop_per_s"] / copy_bw for m in ceilings.get("matmul", {}).values()]
    finite = [x for x in [*intensities, *ridges] if x > 0 and math.isfinite(x)]
    low = math.floor(math.log2(min([1 / 64, *finite]))) - 1
    high = math.ceil(math.log2(max([2048, *finite]))) + 1
    return sorted({2.0**k for k in range(low, high + 1)} | set(ridges))


def show(result: dict, part: str = "all") -> None:
    print(text(result, part))
    png = roofline_png(result) if part != "correctness" else None
    if png is None:
        return
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        return
    if get_ipython() is not None:
        display(Image(data=png))
