"""Act 1, exercise 1: 2-D indexing with edge masks and a row pitch (CuPy RawKernel)."""
