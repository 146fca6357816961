# expect: FAIL
# devices: cpu cuda
# entry: predict_traffic
# says: failed strided read of 24,864 floats at stride 12, by the rules
# The book's table read back: every byte count rounded to three significant figures (16.8 MB). Within
# 2% of the H100's counters, but not the rules' answer for the accesses nobody profiled.
def _rounded(x: int) -> float:
    return float(f"{x:.3g}")


def predict_traffic(access: dict) -> dict:
    if access["pattern"] == "strided_read":
        n, stride = access["n"], access["stride"]
        apart = 4 * stride
        return {
            "sectors_per_request": min(apart, 32),
            "l2_read_bytes": _rounded(n * min(apart, 32)),
            "l2_write_sectors": _rounded(n * 4 // 32),
            "dram_read_bytes": _rounded(n * min(apart, 64)),
        }
    elements = access["rows"] * access["cols"]
    written = elements if access["pattern"] == "transpose_naive" else elements * 4 // 32
    return {"sectors_per_request": 4, "l2_read_bytes": _rounded(elements * 4), "l2_write_sectors": _rounded(written), "dram_read_bytes": _rounded(elements * 4)}
