"""Act 4, SGEMM step 4: 1-D block tiling (CuPy RawKernel)."""
