"""Act 0, exercise 2: SAXPY as a CuPy RawKernel."""
