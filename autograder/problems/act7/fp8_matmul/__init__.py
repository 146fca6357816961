"""Act 7: the fp8 e4m3 scaled matmul in Triton (compute capability 8.9 and newer)."""
