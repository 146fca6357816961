"""Act 4, SGEMM step 1: naive (CuPy RawKernel)."""
