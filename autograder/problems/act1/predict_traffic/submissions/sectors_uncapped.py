# expect: FAIL
# devices: cpu cuda
# entry: predict_traffic
# says: sectors_per_request
# The sectors of a request grow with the stride for ever (4 * stride): a warp has 32 lanes, so it can
# never touch more than 32 sectors, and the L2 traffic stops growing with them.
def predict_traffic(access: dict) -> dict:
    if access["pattern"] == "strided_read":
        n, stride = access["n"], access["stride"]
        apart = 4 * stride
        return {
            "sectors_per_request": apart,
            "l2_read_bytes": n * apart,
            "l2_write_sectors": n * 4 // 32,
            "dram_read_bytes": n * min(apart, 64),
        }
    elements = access["rows"] * access["cols"]
    written = elements if access["pattern"] == "transpose_naive" else elements * 4 // 32
    return {"sectors_per_request": 4, "l2_read_bytes": elements * 4, "l2_write_sectors": written, "dram_read_bytes": elements * 4}
