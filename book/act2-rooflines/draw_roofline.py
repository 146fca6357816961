"""Draws roofline-h200.png for the Act 2 chapter: `python book/act2-rooflines/draw_roofline.py`.

The ceilings are the three the grader measured on an NVIDIA H200 in the course's GPU run
(results/runs/2026-11-22-h200-ceilings/doctor.log). The example operations are placed ON the roof at their arithmetic
intensity: the figure shows where each would land at its bound, not a measurement of it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COPY_BANDWIDTH = 4.141e12  # bytes/s, read + write, measured
PEAK = {"float32": 50.5e12, "bfloat16": 797.4e12}  # FLOP/s, cuBLAS matmul, measured

# (label, FLOP per byte of minimum traffic, dtype whose roof applies, label offset in points, alignment);
# intensities from index.md. Three points share the bf16 roof, so their labels are spread by hand.
EXAMPLES = [
    ("fp32 add", 1 / 12, "float32", (8, -12), "left"),
    ("fp32 softmax", 5 / 8, "float32", (8, -12), "left"),
    ("bf16 naive attention", 4096 * 128 / (2 * (4096 + 128)), "bfloat16", (6, -12), "left"),
    ("bf16 matmul n=1024", 1024 / 3, "bfloat16", (-4, 10), "right"),
    ("fp32 matmul n=4096", 4096 / 6, "float32", (0, 8), "center"),
    ("bf16 flash attention", 4096 / 2, "bfloat16", (0, -16), "center"),
    ("bf16 matmul n=8192", 8192 / 3, "bfloat16", (0, 10), "center"),
]


def attainable(intensity, dtype: str):
    return np.minimum(PEAK[dtype], np.asarray(intensity) * COPY_BANDWIDTH)


def main() -> None:
    intensity = np.logspace(-2, 4.3, 400)
    fig, ax = plt.subplots(figsize=(8, 5))
    for dtype, style in (("bfloat16", "-"), ("float32", "--")):
        ridge = PEAK[dtype] / COPY_BANDWIDTH
        ax.plot(intensity, attainable(intensity, dtype), style, color="black",
                label=f"{dtype} roof {PEAK[dtype] / 1e12:.1f} TFLOP/s, ridge {ridge:.1f} FLOP/byte")
        ax.axvline(ridge, color="grey", linewidth=0.6, linestyle=":")
    for label, x, dtype, offset, align in EXAMPLES:
        y = float(attainable(x, dtype))
        ax.plot([x], [y], "o", color="tab:orange" if dtype == "float32" else "tab:blue")
        ax.annotate(label, (x, y), textcoords="offset points", xytext=offset, ha=align, fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(2e10, 3e15)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of minimum traffic)")
    ax.set_ylabel("attainable FLOP/s")
    ax.set_title("Roofline of the course's NVIDIA H200 (copy bandwidth 4,141 GB/s)")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(__file__).with_name("roofline-h200.png")
    fig.savefig(out, dpi=110, metadata={"Software": None})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
