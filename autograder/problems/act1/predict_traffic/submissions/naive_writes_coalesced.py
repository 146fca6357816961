# expect: FAIL
# devices: cpu cuda
# entry: predict_traffic
# says: lts__t_sectors_srcunit_tex_op_write.sum of transpose_naive
# The naive transpose's writes counted as if they were coalesced, 4 sectors per 32 floats: they go down
# a column of out, 32 floats `rows` apart, a sector each.
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
    written = elements * 4 // 32 if access["pattern"] == "transpose_naive" else elements * 4 // 32
    return {"sectors_per_request": 4, "l2_read_bytes": elements * 4, "l2_write_sectors": written, "dram_read_bytes": elements * 4}
