"""Act 1, exercise 2: a shared-memory tiled transpose (CuPy RawKernel)."""
