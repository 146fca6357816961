"""Act 4, SGEMM step 5: 2-D block tiling (CuPy RawKernel)."""
