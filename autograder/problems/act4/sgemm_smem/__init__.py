"""Act 4, SGEMM step 3: shared-memory cache blocking (CuPy RawKernel)."""
