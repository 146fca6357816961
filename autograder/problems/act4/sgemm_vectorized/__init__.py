"""Act 4, SGEMM step 6: vectorised memory access (CuPy RawKernel)."""
