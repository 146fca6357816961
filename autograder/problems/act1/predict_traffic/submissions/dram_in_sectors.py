# expect: FAIL
# devices: cpu cuda
# entry: predict_traffic
# says: dram__bytes_read.sum of strided_read_16
# DRAM read in 32-byte sectors, like L2: the 64-byte pairs the memory controller fetches are forgotten,
# so from 64 bytes apart on every float is predicted to cost half what it does.
def predict_traffic(access: dict) -> dict:
    if access["pattern"] == "strided_read":
        n, stride = access["n"], access["stride"]
        apart = 4 * stride
        return {
            "sectors_per_request": min(apart, 32),
            "l2_read_bytes": n * min(apart, 32),
            "l2_write_sectors": n * 4 // 32,
            "dram_read_bytes": n * min(apart, 32),
        }
    elements = access["rows"] * access["cols"]
    written = elements if access["pattern"] == "transpose_naive" else elements * 4 // 32
    return {"sectors_per_request": 4, "l2_read_bytes": elements * 4, "l2_write_sectors": written, "dram_read_bytes": elements * 4}
