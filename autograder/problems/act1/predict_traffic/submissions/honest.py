# expect: PASS
# devices: cpu cuda
# entry: predict_traffic
# The rules in closed form: a float costs min(4 * stride, 32) bytes at L2 and min(4 * stride, 64) at DRAM.
def predict_traffic(access: dict) -> dict:
    if access["pattern"] == "strided_read":
        n, stride = access["n"], access["stride"]
        apart = 4 * stride
        return {
            "sectors_per_request": min(apart, 32),
            "l2_read_bytes": n * min(apart, 32),
            "l2_write_sectors": n * 4 // 32,
            "dram_read_bytes": n * min(apart, 64),
        }
    elements = access["rows"] * access["cols"]
    written = elements if access["pattern"] == "transpose_naive" else elements * 4 // 32
    return {"sectors_per_request": 4, "l2_read_bytes": elements * 4, "l2_write_sectors": written, "dram_read_bytes": elements * 4}
