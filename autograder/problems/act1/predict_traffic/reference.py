"""Predict the traffic, then check it against Nsight Compute: the counting rules for Act 1's strided
read and its two transposes (the reference), the cases they are checked on, and the judge that holds
the profiled cases to the counters Nsight Compute measured on an H100 (``ncu_h100.json``, copied from
the committed run it names; it never leaves the judge).

An access is plain data: ``{"pattern": "strided_read", "n", "stride"}`` (thread ``i`` reads
``x[i * stride]`` and writes ``out[i]``, 4-byte floats, ``n`` a multiple of 32) or ``{"pattern":
"transpose_naive" | "transpose_tiled", "rows", "cols"}`` (Exercise 1.2's kernels on a float32
matrix, both sides multiples of 32). Buffers start on a 256-byte boundary, as cudaMalloc's do, and
the caches start cold, as ncu's ``--cache-control all`` leaves them. A prediction is
``{"sectors_per_request", "l2_read_bytes", "l2_write_sectors", "dram_read_bytes"}``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from autograder import exact

WARP = 32
FLOAT = 4
SECTOR = 32  # bytes: the unit L1 asks of L2
DRAM_FETCH = 64  # bytes: a pair of sectors, the unit the H100's memory controller reads
KEYS = ("sectors_per_request", "l2_read_bytes", "l2_write_sectors", "dram_read_bytes")
PATTERNS = ("strided_read", "transpose_naive", "transpose_tiled")


def _units(stride: int, unit: int) -> int:
    """Distinct ``unit``-byte blocks one warp's 32 loads touch (a warp's first float sits at byte
    128 * stride * warp, a multiple of 64, so no two warps share a block)."""
    return len({lane * stride * FLOAT // unit for lane in range(WARP)})


def reference(access: dict) -> dict:
    """What Nsight Compute counts for one run of the access's kernel, by the rules of the coalescing page."""
    if access["pattern"] == "strided_read":
        n, stride = access["n"], access["stride"]
        warps, sectors = n // WARP, _units(stride, SECTOR)
        return {
            "sectors_per_request": sectors,
            "l2_read_bytes": warps * sectors * SECTOR,
            "l2_write_sectors": n * FLOAT // SECTOR,  # out[i]: 32 adjacent floats per warp, 4 sectors
            "dram_read_bytes": warps * _units(stride, DRAM_FETCH) * DRAM_FETCH,
        }
    elements = access["rows"] * access["cols"]
    # Both kernels read x along its rows: a warp loads 32 adjacent floats, 4 sectors. The naive one
    # writes down a column of out, 32 floats `rows` apart (at least 128 bytes): a sector per float.
    # The tiled one writes along a row of out, like a copy.
    written = elements if access["pattern"] == "transpose_naive" else elements * FLOAT // SECTOR
    return {"sectors_per_request": WARP * FLOAT // SECTOR, "l2_read_bytes": elements * FLOAT, "l2_write_sectors": written, "dram_read_bytes": elements * FLOAT}


# --- the H100's counters ---------------------------------------------------------------------------

PROFILED = json.loads(Path(__file__).with_name("ncu_h100.json").read_text())
# Within this of the measured counter: the rules leave out a few kilobytes of DRAM reads (the
# kernel's arguments, code and page tables: 5 to 22 KB in the profiled run, under 0.04%).
TOLERANCE = 0.02
# Each prediction, the counter it is held to (as Nsight Compute names it), and how that counter is read.
COUNTERS = {
    "sectors_per_request": (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        lambda c: c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / c["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
    ),
    "l2_read_bytes": ("lts__t_sectors_srcunit_tex_op_read.sum x 32 bytes", lambda c: c["lts__t_sectors_srcunit_tex_op_read.sum"] * SECTOR),
    "l2_write_sectors": ("lts__t_sectors_srcunit_tex_op_write.sum", lambda c: c["lts__t_sectors_srcunit_tex_op_write.sum"]),
    "dram_read_bytes": ("dram__bytes_read.sum", lambda c: c["dram__bytes_read.sum"]),
}
# Counters no counting rule predicts, left out of the comparison. The naive transpose read 338 MB
# from DRAM for a 268 MB input: its 67 million partial-sector writes pass through L2, and what L2
# does with them (merging, evicting, filling the rest of a sector) is its policy, not a count.
NOT_PREDICTABLE = {"transpose_naive": {"dram_read_bytes"}}


def profiled_kernel(access: dict) -> str | None:
    """The name of the profiled kernel that ran exactly this access, None for an access of the rules only."""
    return next((name for name, kernel in PROFILED["kernels"].items() if kernel["access"] == access), None)


def make_cases(seed: int) -> list:
    r = random.Random(seed)
    # The eight profiled launches, checked against the H100's counters.
    cases = [{"access": dict(kernel["access"])} for kernel in PROFILED["kernels"].values()]
    # Edges of the rules: one warp; strides that are no power of two; floats 48 bytes apart, a sector
    # each at L2 but three 64-byte pairs for every four at DRAM; past 64 bytes; a transpose of one
    # tile, and ones whose sides are not multiples of the tiled kernel's 64.
    for n, stride in ((32, 1), (32 * 1000, 3), (32 * 777, 12), (32 * 4096, 17), (32 * 3, 64)):
        cases.append({"access": {"pattern": "strided_read", "n": n, "stride": stride}})
    for pattern, rows, cols in (("transpose_naive", 32, 32), ("transpose_tiled", 32, 96), ("transpose_naive", 4096, 32), ("transpose_tiled", 96, 4096)):
        cases.append({"access": {"pattern": pattern, "rows": rows, "cols": cols}})
    for i in range(8):
        # Half of the strides where the rules bend (up to 16 floats), half beyond.
        stride = r.randrange(1, 17) if i % 2 else r.randrange(17, 65)
        cases.append({"access": {"pattern": "strided_read", "n": 32 * r.randrange(1, 1 << 18), "stride": stride}})
    for _ in range(4):
        pattern = r.choice(PATTERNS[1:])
        cases.append({"access": {"pattern": pattern, "rows": 32 * r.randrange(1, 513), "cols": 32 * r.randrange(1, 513)}})
    return cases


def describe_case(case: dict) -> str:
    access = case["access"]
    if access["pattern"] == "strided_read":
        shown = f"strided read of {access['n']:,} floats at stride {access['stride']}"
    else:
        shown = f"{access['pattern'].replace('_', ' ')} of {access['rows']:,} x {access['cols']:,}"
    kernel = profiled_kernel(access)
    return f"{shown}, against Nsight Compute's {kernel} on the H100" if kernel else f"{shown}, by the rules"


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3f}"


def judge(got, expected: dict, case: dict) -> str | None:
    """A profiled access: each prediction within TOLERANCE of the H100's counter, named with both
    values where it is not. Any other access: the rules' answer exactly (up to float rounding)."""
    kernel = profiled_kernel(case["access"])
    if kernel is None:
        return exact.mismatch(got, expected, rel_tol=1e-9)
    if not isinstance(got, dict) or set(got) != set(KEYS):
        return f"the answer is {got!r}, expected a dict with keys {sorted(KEYS)}"
    counters = PROFILED["kernels"][kernel]["counters"]
    for key in KEYS:
        if not _number(got[key]):
            return f"[{key!r}] is {got[key]!r}, expected a number"
        if key in NOT_PREDICTABLE.get(kernel, ()):
            continue
        name, read = COUNTERS[key]
        measured = read(counters)
        if abs(got[key] - measured) > TOLERANCE * measured:
            return (
                f"[{key!r}] is {_shown(got[key])}, but Nsight Compute measured {_shown(measured)} on the H100 ({name} of {kernel}): "
                f"{abs(got[key] - measured) / measured:.1%} off, more than the {TOLERANCE:.0%} allowed"
            )
    return None
