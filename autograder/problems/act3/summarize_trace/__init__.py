"""Act 3, exact answer: the top kernels, GPU idle share and regime of a step, read from a trace."""
