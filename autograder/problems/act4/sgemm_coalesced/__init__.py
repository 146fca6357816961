"""Act 4, SGEMM step 2: global-memory coalescing (CuPy RawKernel)."""
