# expect: FAIL
# devices: cpu cuda
# Bandwidth in bits per second: the bus width was not divided by 8.
def peak_rates(sms, clock_ghz, flops_per_clock_per_sm, bus_width_bits, data_rate_gbps):
    flops = {dtype: sms * per_sm * clock_ghz * 1e9 for dtype, per_sm in flops_per_clock_per_sm.items()}
    return {"flops": flops, "bandwidth": bus_width_bits * data_rate_gbps * 1e9}
