"""Act 1, exercise 3: a warp-shuffle sum reduction (CuPy RawKernel)."""
